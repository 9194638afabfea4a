#include "kernels/cuda/moe_combine_ranks.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

struct parts_arg {
  moe_rows_part part[moe_combine_max_parts];
  int count;
};

// One block per token, 4 adjacent columns per thread, summed as moe_combine sums.
static __global__ void moe_combine_ranks_kernel(parts_arg parts, const int* chosen, int k, int hidden,
                                                __nv_bfloat16* out) {
  const size_t t = blockIdx.x;
  for (int c = int(threadIdx.x) * 4; c < hidden; c += block_size * 4) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int j = 0; j < k; ++j) {
      const int e = chosen[t * k + j];
      const float* y = nullptr;
      for (int p = 0; p < parts.count; ++p)
        if (e >= parts.part[p].first_expert && e < parts.part[p].last_expert) y = parts.part[p].y;
      if (y == nullptr) continue;
      const float4 v = *reinterpret_cast<const float4*>(y + (t * k + j) * hidden + c);
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    uint2 packed;
    __nv_bfloat162* halves = reinterpret_cast<__nv_bfloat162*>(&packed);
    halves[0] = __floats2bfloat162_rn(sum.x, sum.y);
    halves[1] = __floats2bfloat162_rn(sum.z, sum.w);
    *reinterpret_cast<uint2*>(out + t * hidden + c) = packed;
  }
}

static void launch(const parts_arg& parts, const int* chosen, int tokens, int k, int hidden, __nv_bfloat16* out,
                   cudaStream_t stream) {
  moe_combine_ranks_kernel<<<tokens, block_size, 0, stream>>>(parts, chosen, k, hidden, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void moe_combine_ranks(const moe_rows_part* parts, int count, const int* chosen, int tokens, int k, int hidden,
                       __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && k > 0 && hidden > 0 && hidden % 4 == 0, "bad shape");
  TROUPE_CHECK(count >= 0 && count <= moe_combine_max_parts, "too many parts");
  TROUPE_CHECK(uintptr_t(out) % 8 == 0, "misaligned pointers");
  parts_arg arg{};
  arg.count = count;
  for (int p = 0; p < count; ++p) {
    TROUPE_CHECK(uintptr_t(parts[p].y) % 16 == 0, "misaligned pointers");
    arg.part[p] = parts[p];
  }
  if (tokens == 0) return;
  launch(arg, chosen, tokens, k, hidden, out, stream);
}

}  // namespace troupe::cuda
