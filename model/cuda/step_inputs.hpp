#pragma once
// One step's inputs for the CUDA step: written on the host into pinned memory, then copied
// to the device in a few transfers. Device addresses never change (capacities are fixed
// at creation), so a captured decode graph reads each step's values from the same places.
#include <cstdint>
#include <vector>

#include "model/forward_batch.hpp"
#include "model/step_runner.hpp"

#include <cuda_runtime.h>

namespace troupe {

struct step_capacity {
  int max_tokens = 0;          // new tokens in one step
  int max_seqs = 0;            // sequences in one step
  int max_blocks_per_seq = 0;  // a block table's length
  int block_size = 0;
  int history_entries = 0;  // distinct (sequence, token) pairs the penalties see
  int mask_words = 0;       // 64-bit words of one allowed-token mask: vocab / 64, rounded up
};

template <class T>
struct mirrored {
  T* host = nullptr;
  T* device = nullptr;
};

class step_inputs {
 public:
  explicit step_inputs(const step_capacity& capacity);
  ~step_inputs();
  step_inputs(const step_inputs&) = delete;
  step_inputs& operator=(const step_inputs&) = delete;

  // Fills the arrays for `batch`, padded to `pad_to` single-token sequences when larger
  // (a decode graph's bucket: padding rows write no KV nor state and sample greedily). Penalty
  // histories beyond history_entries fail the step with a clear error. Without `sampling`
  // (a pipeline stage before the last) the sequences' logits rows are not this stage's:
  // `samples` is empty and the sampling arrays are left alone.
  status fill(const forward_batch& batch, const std::vector<sample_request>& samples, int pad_to, bool sampling);
  // Copies what fill wrote to the device, on `stream`.
  void upload(cudaStream_t stream) const;

  const step_capacity& capacity() const { return capacity_; }

  // Per token [max_tokens].
  mirrored<int> token_ids, positions, slots;
  // Per sequence [max_seqs] (query_starts and history_offsets [max_seqs + 1]); state_slots:
  // its recurrent state in the linear-attention layers' pools (-1 for padding, and for every
  // sequence of a model without such layers).
  mirrored<int> seq_lens, query_starts, positions_start, state_slots;
  // Block tables [max_seqs, max_blocks_per_seq].
  mirrored<int> block_tables;
  // Per sampled row [max_seqs]: which token's hidden state it reads, and its parameters.
  mirrored<int> logit_rows, top_k, top_logprobs, history_offsets;
  // Per sampled row [max_seqs]: its mask's index in `allowed`, or -1 when unconstrained.
  mirrored<int> mask_rows;
  mirrored<float> temperature, top_p, min_p, repetition_penalty, frequency_penalty, presence_penalty;
  mirrored<double> uniform;
  // Penalty histories and logit biases, CSR by history_offsets [history_entries].
  mirrored<int> history_tokens, history_seen, history_generated;
  mirrored<float> history_bias;
  // The constrained rows' masks, [max_seqs, mask_words], in the order of their first use.
  mirrored<uint64_t> allowed;

 private:
  step_capacity capacity_;
  char* host_ = nullptr;
  char* device_ = nullptr;
  size_t small_bytes_ = 0;  // the per-token and per-sequence arrays come first in memory
  int rows_ = 0, sequences_ = 0, entries_ = 0, masks_ = 0;  // what the last fill used
};

}  // namespace troupe
