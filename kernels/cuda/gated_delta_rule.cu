#include "kernels/cuda/gated_delta_rule.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/delta_rule_gates.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int warps = 4, block_size = 32 * warps;
static constexpr int slice = 32;  // value columns of one block: one a lane
static constexpr int loads_per_thread = delta_rule_max_key_dim / block_size;

// One token's inputs for one block: elements threadIdx.x + block_size e of q and k (zero
// past key_dim), the lane's column of v, and in a decode step its gates.
struct token_inputs {
  float q[loads_per_thread], k[loads_per_thread], v;
  float2 gates;
};

template <bool prompts>
static __device__ token_inputs load_token(const delta_rule_inputs& in, const delta_rule_heads& d, int row, int h,
                                          int key_head, int j) {
  token_inputs x;
  const size_t at = size_t(row) * in.qkv_stride;
#pragma unroll
  for (int e = 0; e < loads_per_thread; ++e) {
    const int i = int(threadIdx.x) + block_size * e;
    const bool inside = i < d.key_dim;
    x.q[e] = inside ? __bfloat162float(in.q[at + size_t(key_head) * d.key_dim + i]) : 0.0f;
    x.k[e] = inside ? __bfloat162float(in.k[at + size_t(key_head) * d.key_dim + i]) : 0.0f;
  }
  x.v = j < d.value_dim ? __bfloat162float(in.v[at + size_t(h) * d.value_dim + j]) : 0.0f;
  if constexpr (!prompts) x.gates = delta_rule_gates_of(in, row, h);
  return x;
}

// Block: `slice` value columns of one value head of one sequence, grid (slices, value
// heads, sequences). Columns of the state are independent (S^T k and S^T q reduce over
// rows), so the block holds its columns for the whole scan: lane l has column l, warp w
// rows w + warps r, most rows a thread. The state is read once and written once, and the
// next token's inputs are loaded while a token is computed. A token needs S^T k (for
// delta) and its output S'^T q, where S' = decay S + k delta^T; as S'^T q = decay S^T q +
// delta (k . q), both sums run over the old state in one pass and meet across warps in
// shared memory (the token's one barrier besides staging q and k), and the update follows.
// q and k are staged two tokens' worth, so staging the next token cannot overwrite what a
// slower warp still reads for this one. In a decode step (one token a sequence) every
// thread makes the token's gates with its inputs. With prompts, they are made
// block_size tokens at a time, a token a thread, beside the staging of the first of them;
// each thread reads its token's before the sums' barrier, so the next batch cannot
// overwrite one still to be read.
template <int most, bool prompts>
static __global__ void __launch_bounds__(block_size)
    gated_delta_rule_kernel(delta_rule_inputs in, delta_rule_heads d, state_sequences seqs, float* states,
                            __nv_bfloat16* out, int below) {
  __shared__ float qs[2][delta_rule_max_key_dim], ks[2][delta_rule_max_key_dim];
  __shared__ float2 parts[warps][slice];              // a warp's share of (S^T k, S^T q) for each column
  __shared__ float2 gates[prompts ? block_size : 1];  // (g, beta) of tokens t - t % block_size on
  begin_dependent();
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int h = int(blockIdx.y), s = int(blockIdx.z), j = int(blockIdx.x) * slice + lane;
  const int dk = d.key_dim, dv = d.value_dim, key_head = h / (d.value_heads / d.key_heads);
  const bool column = j < dv;
  const int first = seqs.query_starts != nullptr ? seqs.query_starts[s] : s;
  const int len = seqs.query_starts != nullptr ? seqs.query_starts[s + 1] - first : 1;
  if (len >= below) return;  // the chunked kernel's
  auto out_at = [&](int t) { return out + (size_t(first + t) * d.value_heads + h) * dv + j; };
  const int slot = seqs.slots[s];
  if (slot < 0) {  // the whole block leaves together
    if (warp == 0 && column)
      for (int t = 0; t < len; ++t) *out_at(t) = __float2bfloat16(0.0f);
    return;
  }
  if (len <= 0) return;
  float* state = states + (size_t(slot) * d.value_heads + h) * dk * dv + j;
  const bool fresh = seqs.positions_start[s] == 0;
  float S[most];
#pragma unroll
  for (int r = 0; r < most; ++r) {
    const int i = warp + warps * r;
    S[r] = !fresh && column && i < dk ? state[size_t(i) * dv] : 0.0f;
  }
  const float q_scale = 1.0f / sqrtf(float(dk));
  token_inputs next = load_token<prompts>(in, d, first, h, key_head, j);
  for (int t = 0; t < len; ++t) {
    const token_inputs x = next;
    const float* q = qs[t & 1];
    const float* k = ks[t & 1];
#pragma unroll
    for (int e = 0; e < loads_per_thread; ++e) {
      const int i = int(threadIdx.x) + block_size * e;
      if (i < dk) qs[t & 1][i] = x.q[e], ks[t & 1][i] = x.k[e];
    }
    if (prompts && t % block_size == 0 && t + int(threadIdx.x) < len)
      gates[threadIdx.x] = delta_rule_gates_of(in, first + t + int(threadIdx.x), h);
    if (t + 1 < len) next = load_token<prompts>(in, d, first + t + 1, h, key_head, j);
    __syncthreads();  // q, k (and gates) staged; every warp is past the previous token's sums
    const float2 gate = prompts ? gates[t % block_size] : x.gates;
    float qq = 0.0f, kk = 0.0f, qk = 0.0f;
    for (int i = lane; i < dk; i += 32) qq += q[i] * q[i], kk += k[i] * k[i], qk += q[i] * k[i];
    for (int offset = 16; offset > 0; offset /= 2) {
      qq += __shfl_xor_sync(0xffffffffu, qq, offset);
      kk += __shfl_xor_sync(0xffffffffu, kk, offset);
      qk += __shfl_xor_sync(0xffffffffu, qk, offset);
    }
    const float q_norm = 1.0f / sqrtf(qq + 1e-6f) * q_scale, k_norm = 1.0f / sqrtf(kk + 1e-6f);
    float2 part = {0.0f, 0.0f};
#pragma unroll
    for (int r = 0; r < most; ++r) {
      const int i = warp + warps * r;
      if (i < dk) part.x += S[r] * (k[i] * k_norm), part.y += S[r] * (q[i] * q_norm);
    }
    parts[warp][lane] = part;
    __syncthreads();
    float2 sum = {0.0f, 0.0f};
#pragma unroll
    for (int w = 0; w < warps; ++w) sum.x += parts[w][lane].x, sum.y += parts[w][lane].y;
    const float decay = expf(gate.x);
    const float delta = gate.y * (x.v - decay * sum.x);
    if (warp == 0 && column) *out_at(t) = __float2bfloat16(decay * sum.y + delta * (qk * q_norm * k_norm));
#pragma unroll
    for (int r = 0; r < most; ++r) {
      const int i = warp + warps * r;
      if (i < dk) S[r] = S[r] * decay + (k[i] * k_norm) * delta;
    }
  }
#pragma unroll
  for (int r = 0; r < most; ++r) {
    const int i = warp + warps * r;
    if (column && i < dk) state[size_t(i) * dv] = S[r];
  }
}

void gated_delta_rule(const delta_rule_inputs& in, const delta_rule_heads& d, const state_sequences& seqs,
                      float* states, __nv_bfloat16* out, cudaStream_t stream, int below) {
  TROUPE_CHECK(d.key_heads > 0 && d.value_heads > 0 && d.value_heads % d.key_heads == 0,
               "value heads must be a multiple of key heads");
  TROUPE_CHECK(d.key_dim > 0 && d.key_dim <= delta_rule_max_key_dim && d.value_dim > 0, "key_dim must be 1 to 256");
  TROUPE_CHECK(in.qkv_stride > 0 && in.gate_stride >= d.value_heads, "bad row stride");
  TROUPE_CHECK(seqs.seqs >= 0 && seqs.seqs <= 65535 && d.value_heads <= 65535, "too many sequences or heads");
  TROUPE_CHECK(seqs.query_starts != nullptr || seqs.max_tokens == 1, "decode steps have one token a sequence");
  TROUPE_CHECK(seqs.positions_start != nullptr && seqs.slots != nullptr, "sequences need starts and slots");
  TROUPE_CHECK(in.q != nullptr && in.k != nullptr && in.v != nullptr && in.a != nullptr && in.b != nullptr &&
                   in.neg_decay_rate != nullptr && in.dt_bias != nullptr && states != nullptr && out != nullptr,
               "null pointer");
  if (seqs.seqs == 0) return;
  const dim3 grid((d.value_dim + slice - 1) / slice, d.value_heads, seqs.seqs);
  const bool narrow = d.key_dim <= warps * 32, prompts = seqs.query_starts != nullptr;
  auto kernel = narrow ? (prompts ? gated_delta_rule_kernel<32, true> : gated_delta_rule_kernel<32, false>)
                       : (prompts ? gated_delta_rule_kernel<64, true> : gated_delta_rule_kernel<64, false>);
  launch_dependent(kernel, grid, block_size, 0, stream, in, d, seqs, states, out, below);
}

}  // namespace troupe::cuda
