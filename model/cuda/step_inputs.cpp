#include "model/cuda/step_inputs.hpp"

#include <algorithm>
#include <map>

#include "kernels/cuda/check.cuh"

namespace troupe {
namespace {

// Carves consecutive aligned arrays out of a host and a device allocation at the same offsets.
struct carver {
  char* host;
  char* device;
  size_t offset = 0;
  template <class T>
  mirrored<T> take(size_t count) {
    offset = (offset + 15) / 16 * 16;
    mirrored<T> m{reinterpret_cast<T*>(host + offset), reinterpret_cast<T*>(device + offset)};
    offset += count * sizeof(T);
    return m;
  }
};

}  // namespace

step_inputs::step_inputs(const step_capacity& c) : capacity_(c) {
  // Two walks: the first with null bases measures, the second hands out the arrays.
  for (int pass = 0; pass < 2; ++pass) {
    carver k{host_, device_};
    const size_t t = size_t(c.max_tokens), s = size_t(c.max_seqs);
    token_ids = k.take<int>(t);
    positions = k.take<int>(t);
    slots = k.take<int>(t);
    seq_lens = k.take<int>(s);
    query_starts = k.take<int>(s + 1);
    positions_start = k.take<int>(s);
    state_slots = k.take<int>(s);
    logit_rows = k.take<int>(s);
    top_k = k.take<int>(s);
    top_logprobs = k.take<int>(s);
    history_offsets = k.take<int>(s + 1);
    mask_rows = k.take<int>(s);
    temperature = k.take<float>(s);
    top_p = k.take<float>(s);
    min_p = k.take<float>(s);
    repetition_penalty = k.take<float>(s);
    frequency_penalty = k.take<float>(s);
    presence_penalty = k.take<float>(s);
    uniform = k.take<double>(s);
    small_bytes_ = k.offset;
    block_tables = k.take<int>(s * size_t(c.max_blocks_per_seq));
    history_tokens = k.take<int>(size_t(c.history_entries));
    history_seen = k.take<int>(size_t(c.history_entries));
    history_generated = k.take<int>(size_t(c.history_entries));
    history_bias = k.take<float>(size_t(c.history_entries));
    allowed = k.take<uint64_t>(s * size_t(c.mask_words));
    if (pass == 0) {
      TROUPE_CUDA_CHECK(cudaMallocHost(&host_, k.offset));
      TROUPE_CUDA_CHECK(cudaMalloc(&device_, k.offset));
    }
  }
}

step_inputs::~step_inputs() {
  cudaFreeHost(host_);
  cudaFree(device_);
}

status step_inputs::fill(const forward_batch& batch, const std::vector<sample_request>& samples, int pad_to,
                         bool sampling) {
  const step_capacity& c = capacity_;
  const int tokens = int(batch.token_ids.size()), seqs = int(batch.sequences.size());
  rows_ = std::max(tokens, pad_to);
  sequences_ = std::max(seqs, pad_to);
  TROUPE_CHECK(rows_ <= c.max_tokens && sequences_ <= c.max_seqs, "step larger than the runner's buffers");
  query_starts.host[0] = 0;
  int sampled = 0;
  for (int s = 0; s < sequences_; ++s) {
    int* table = block_tables.host + size_t(s) * size_t(c.max_blocks_per_seq);
    if (s >= seqs) {  // padding: one token at position 0 of block 0, written nowhere
      token_ids.host[s] = 0;
      positions.host[s] = 0;
      slots.host[s] = -1;
      seq_lens.host[s] = 1;
      positions_start.host[s] = 0;
      state_slots.host[s] = -1;
      query_starts.host[s + 1] = s + 1;
      table[0] = 0;
      continue;
    }
    const sequence_span& span = batch.sequences[size_t(s)];
    TROUPE_CHECK(int(span.block_table.size()) <= c.max_blocks_per_seq, "block table longer than max_model_len");
    std::copy(span.block_table.begin(), span.block_table.end(), table);
    for (int i = 0; i < span.tokens; ++i) {
      const int t = span.first_token + i, p = span.start + i;
      token_ids.host[t] = batch.token_ids[size_t(t)];
      positions.host[t] = p;
      slots.host[t] = span.block_table[size_t(p / c.block_size)] * c.block_size + p % c.block_size;
    }
    seq_lens.host[s] = span.start + span.tokens;
    positions_start.host[s] = span.start;
    state_slots.host[s] = span.state_slot;
    query_starts.host[s + 1] = span.first_token + span.tokens;
    if (sampling && span.logits == logits_rows::last) logit_rows.host[sampled++] = span.first_token + span.tokens - 1;
  }
  TROUPE_CHECK(sampled == int(samples.size()), "one sample request per sampling sequence");

  entries_ = 0;
  masks_ = 0;
  if (!sampling) return ok();
  history_offsets.host[0] = 0;
  sampling_params greedy;
  greedy.temperature = 0.0f;
  for (int r = 0; r < sequences_; ++r) {
    const bool real = r < sampled;
    const sampling_params& p = real ? samples[size_t(r)].params : greedy;
    if (!real) logit_rows.host[r] = r;  // padding rows of a decode graph: their own token
    temperature.host[r] = p.temperature;
    top_p.host[r] = p.top_p;
    top_k.host[r] = p.top_k;
    min_p.host[r] = p.min_p;
    repetition_penalty.host[r] = p.repetition_penalty;
    frequency_penalty.host[r] = p.frequency_penalty;
    presence_penalty.host[r] = p.presence_penalty;
    top_logprobs.host[r] = p.top_logprobs;
    uniform.host[r] = real ? sampling_uniform(p.seed, samples[size_t(r)].position) : 0.0;
    const bool penalised = p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
    if (real && (penalised || !p.logit_bias.empty())) {
      // One entry per token the penalties or the bias touch.
      struct entry {
        int seen = 0, generated = 0;
        float bias = 0.0f;
      };
      std::map<int, entry> touched;
      const token_history& h = *samples[size_t(r)].history;
      if (penalised)
        for (const auto& [token, count] : h.seen()) {
          const auto generated = h.generated().find(token);
          touched[token] = {count, generated == h.generated().end() ? 0 : generated->second, 0.0f};
        }
      for (const token_bias& b : p.logit_bias) touched[b.token].bias = b.bias;
      if (entries_ + int(touched.size()) > c.history_entries)
        return error{"the penalties and logit_bias of this step cover more than " + std::to_string(c.history_entries) +
                     " distinct tokens, more than the GPU sampler holds"};
      for (const auto& [token, e] : touched) {
        history_tokens.host[entries_] = token;
        history_seen.host[entries_] = e.seen;
        history_generated.host[entries_] = e.generated;
        history_bias.host[entries_] = e.bias;
        ++entries_;
      }
    }
    history_offsets.host[r + 1] = entries_;
    mask_rows.host[r] = -1;
    if (const std::vector<uint64_t>* mask = real ? samples[size_t(r)].allowed : nullptr) {
      // Tokens past the mask (the model's vocabulary padded beyond the tokenizer's) are out.
      uint64_t* words = allowed.host + size_t(masks_) * size_t(c.mask_words);
      const size_t given = std::min(mask->size(), size_t(c.mask_words));
      std::copy(mask->begin(), mask->begin() + long(given), words);
      std::fill(words + given, words + c.mask_words, uint64_t(0));
      mask_rows.host[r] = masks_++;
    }
  }
  return ok();
}

void step_inputs::upload(cudaStream_t stream) const {
  auto copy = [&](const void* host, size_t bytes) {
    if (bytes == 0) return;
    const size_t offset = size_t(static_cast<const char*>(host) - host_);
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(device_ + offset, host, bytes, cudaMemcpyHostToDevice, stream));
  };
  copy(host_, small_bytes_);
  copy(block_tables.host, size_t(sequences_) * size_t(capacity_.max_blocks_per_seq) * sizeof(int));
  copy(history_tokens.host, size_t(entries_) * sizeof(int));
  copy(history_seen.host, size_t(entries_) * sizeof(int));
  copy(history_generated.host, size_t(entries_) * sizeof(int));
  copy(history_bias.host, size_t(entries_) * sizeof(float));
  copy(allowed.host, size_t(masks_) * size_t(capacity_.mask_words) * sizeof(uint64_t));
}

}  // namespace troupe
