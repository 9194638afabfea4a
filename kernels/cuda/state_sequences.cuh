#pragma once
// A step's sequences as the Gated DeltaNet kernels (causal_conv1d, gated_delta_rule) see
// them: packed in one token buffer, each with its recurrent-state slot in a layer's pool
// (the slots kv_manager hands out beside the KV blocks).

namespace troupe::cuda {

// Device pointers, except the counts.
struct state_sequences {
  int seqs = 0;
  // The most tokens of one sequence (it sizes the grid); 1 for a decode step.
  int max_tokens = 1;
  // [seqs + 1]: sequence i's tokens are rows [query_starts[i], query_starts[i + 1]) of the
  // token buffer. Null: one token a sequence, sequence i's at row i (a decode step).
  const int* query_starts = nullptr;
  // [seqs]: the position of the sequence's first token in this step. 0 starts from a zero
  // state: the slot's old contents are neither read nor kept (the CPU path zeroes them).
  const int* positions_start = nullptr;
  // [seqs]: the sequence's slot in the pool; negative: a padding sequence of a decode graph,
  // whose output rows are zeroed and whose state is not touched.
  const int* slots = nullptr;
};

}  // namespace troupe::cuda
