#include "kernels/cuda/fill_uniform.cuh"

#include <algorithm>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// splitmix64's finaliser of (seed, i); the top 24 bits are the fraction.
static __host__ __device__ float hashed_value(int64_t i, float bound, uint64_t seed) {
  uint64_t x = seed ^ (uint64_t(i) * 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const float u = float(x >> 40) / float(1 << 24);
  return (2.0f * u - 1.0f) * bound;
}

static __global__ void fill_uniform_kernel(__nv_bfloat16* out, int64_t first, int64_t n, float bound, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(block_size) + threadIdx.x; i < n; i += int64_t(gridDim.x) * block_size)
    out[i] = __float2bfloat16(hashed_value(first + i, bound, seed));
}

float uniform_value(int64_t i, float bound, uint64_t seed) { return hashed_value(i, bound, seed); }

void fill_uniform(__nv_bfloat16* out, int64_t first, int64_t n, float bound, uint64_t seed, cudaStream_t stream) {
  TROUPE_CHECK(n >= 0, "negative size");
  if (n == 0) return;
  const int64_t blocks = std::min<int64_t>((n + block_size - 1) / block_size, 65536);
  fill_uniform_kernel<<<unsigned(blocks), block_size, 0, stream>>>(out, first, n, bound, seed);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace troupe::cuda
