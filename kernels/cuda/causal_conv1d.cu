#include "kernels/cuda/causal_conv1d.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_channels = 128;
static constexpr int chunk_tokens = 16;
// Only a sequence's first chunk reaches back into its state, so that chunk's thread can
// read the old state and write the new one with no other block touching it.
static_assert(chunk_tokens >= conv_max_kernel);

// Thread: one channel of one chunk of one sequence's tokens, grid (channel blocks,
// sequences, chunks). The inputs before token t sit right-aligned in a window of
// conv_max_kernel registers, and so do the weights (zeros in front), so every index into
// them is a constant.
static __global__ void causal_conv1d_kernel(const __nv_bfloat16* x, int x_stride, int channels, const float* weight,
                                            int kernel, state_sequences seqs, float* states, __nv_bfloat16* out) {
  constexpr int most = conv_max_kernel;
  const int c = int(blockIdx.x) * block_channels + int(threadIdx.x), s = int(blockIdx.y);
  float w[most];
#pragma unroll
  for (int m = 0; m < most; ++m)
    w[m] = c < channels && m >= most - kernel ? weight[size_t(c) * kernel + (m - (most - kernel))] : 0.0f;
  begin_dependent();
  const int first = seqs.query_starts != nullptr ? seqs.query_starts[s] : s;
  const int len = seqs.query_starts != nullptr ? seqs.query_starts[s + 1] - first : 1;
  const int t0 = int(blockIdx.z) * chunk_tokens, end = min(len, t0 + chunk_tokens);
  if (c >= channels || t0 >= len) return;
  const int slot = seqs.slots[s];
  if (slot < 0) {
    for (int t = t0; t < end; ++t) out[size_t(first + t) * channels + c] = __float2bfloat16(0.0f);
    return;
  }
  const int past = kernel - 1;
  float* state = states + size_t(slot) * past * channels + c;
  const bool fresh = seqs.positions_start[s] == 0;
  // Input i of the sequence: state row past + i before its first token (i < 0).
  auto input = [&](int i) {
    if (i >= 0) return __bfloat162float(x[size_t(first + i) * x_stride + c]);
    return fresh ? 0.0f : state[size_t(past + i) * channels];
  };
  float window[most];
#pragma unroll
  for (int m = 0; m < most; ++m) {
    const int i = t0 - (most - m);
    window[m] = i >= -past ? input(i) : 0.0f;
  }
  for (int t = t0; t < end; ++t) {
#pragma unroll
    for (int m = 0; m < most - 1; ++m) window[m] = window[m + 1];
    window[most - 1] = input(t);
    float o = 0.0f;
#pragma unroll
    for (int m = 0; m < most; ++m) o += w[m] * window[m];
    out[size_t(first + t) * channels + c] = __float2bfloat16(o / (1.0f + expf(-o)));
  }
  if (t0 != 0) return;
  // New row r is input len - past + r: from x, or an old row further down (len >= 1), so
  // rising r reads each old row before it is overwritten.
  for (int r = 0; r < past; ++r) state[size_t(r) * channels] = input(len - past + r);
}

void causal_conv1d_silu(const __nv_bfloat16* x, int x_stride, int channels, const float* weight, int kernel,
                        const state_sequences& seqs, float* states, __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(channels > 0 && x_stride >= channels, "bad conv shape");
  TROUPE_CHECK(kernel >= 1 && kernel <= conv_max_kernel, "conv kernel must be 1 to 8 wide");
  TROUPE_CHECK(seqs.seqs >= 0 && seqs.seqs <= 65535 && seqs.max_tokens >= 1, "bad sequence count");
  TROUPE_CHECK(seqs.query_starts != nullptr || seqs.max_tokens == 1, "decode steps have one token a sequence");
  TROUPE_CHECK(seqs.positions_start != nullptr && seqs.slots != nullptr, "sequences need starts and slots");
  TROUPE_CHECK(x != nullptr && weight != nullptr && states != nullptr && out != nullptr, "null pointer");
  const int chunks = (seqs.max_tokens + chunk_tokens - 1) / chunk_tokens;
  TROUPE_CHECK(chunks <= 65535, "too many tokens in one sequence");
  if (seqs.seqs == 0) return;
  const dim3 grid((channels + block_channels - 1) / block_channels, seqs.seqs, chunks);
  launch_dependent(causal_conv1d_kernel, grid, block_channels, 0, stream, x, x_stride, channels, weight, kernel, seqs,
                   states, out);
}

}  // namespace troupe::cuda
