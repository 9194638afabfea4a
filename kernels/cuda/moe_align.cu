#include "kernels/cuda/moe_align.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int threads = 1024;
static constexpr int warps = threads / 32;
static constexpr size_t max_shared = 48 * 1024;
// Rounds of 32 pairs a warp loads before counting any: that many loads in flight per lane.
static constexpr int rounds = 8;

// Exclusive prefix sum of v over the block's threads; *total gets the sum of all.
static __device__ int block_exclusive_scan(int v, int* warp_sums, int* total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int inclusive = v;
  for (int offset = 1; offset < 32; offset *= 2) {
    const int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  int before = 0;
  *total = 0;
  for (int w = 0; w < warps; ++w) {
    if (w < warp) before += warp_sums[w];
    *total += warp_sums[w];
  }
  return before + inclusive - v;
}

// Warp w owns the pairs [w * chunk, (w + 1) * chunk), 32 at a time, loading `rounds`
// rounds at once (-1 for a pair of no local expert). A pass counts them per expert in the
// warp's own row of `seen` (lanes of one expert found with __match_any_sync, the lowest
// one adding for all); the rows are then prefix-summed per expert, and a second pass
// places each pair after the same expert's pairs of earlier warps, earlier rounds and
// lower lanes: a stable sort.
static __global__ void __launch_bounds__(threads)
    moe_align_kernel(const int* chosen, int pairs, int chunk, int first_expert, int local_experts, moe_plan plan) {
  extern __shared__ int shared[];
  int* seen = shared;                             // [warps, local_experts]
  int* first_row = seen + warps * local_experts;  // [local_experts]
  int* warp_sums = first_row + local_experts;     // [warps]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int* mine = seen + warp * local_experts;
  const int begin = min(pairs, warp * chunk), end = min(pairs, begin + chunk);
  const unsigned below = (1u << lane) - 1;

  for (int i = threadIdx.x; i < warps * local_experts; i += threads) seen[i] = 0;
  __syncthreads();
  auto load = [&](int p0, int(&e)[rounds]) {
#pragma unroll
    for (int r = 0; r < rounds; ++r) {
      const int p = p0 + r * 32 + lane;
      const int local = p < end ? chosen[p] - first_expert : -1;
      e[r] = local >= 0 && local < local_experts ? local : -1;
    }
  };
  for (int p0 = begin; p0 < end; p0 += rounds * 32) {
    int e[rounds];
    load(p0, e);
#pragma unroll
    for (int r = 0; r < rounds; ++r) {
      const unsigned same = __match_any_sync(0xffffffffu, e[r]);
      if (e[r] >= 0 && (same & below) == 0) mine[e[r]] += __popc(same);
      __syncwarp();
    }
  }
  __syncthreads();

  // Per expert: each warp's row becomes the count of earlier warps; the total goes aside.
  for (int e = threadIdx.x; e < local_experts; e += threads) {
    int count = 0;
    for (int w = 0; w < warps; ++w) {
      const int here = seen[w * local_experts + e];
      seen[w * local_experts + e] = count;
      count += here;
    }
    first_row[e] = count;
  }
  __syncthreads();

  // Each thread lays out a contiguous run of experts: tiles, padding, and first rows.
  const int rows = plan.tile_rows;
  const int per_thread = (local_experts + threads - 1) / threads;
  const int e_begin = min(local_experts, int(threadIdx.x) * per_thread);
  const int e_end = min(local_experts, e_begin + per_thread);
  int my_tiles = 0;
  for (int e = e_begin; e < e_end; ++e) my_tiles += (first_row[e] + rows - 1) / rows;
  int tile_total;
  int tile = block_exclusive_scan(my_tiles, warp_sums, &tile_total);
  for (int e = e_begin; e < e_end; ++e) {
    const int count = first_row[e], tiles = (count + rows - 1) / rows, row = tile * rows;
    plan.counts[e] = count;
    plan.offsets[e] = row;
    first_row[e] = row;
    for (int i = 0; i < tiles; ++i) plan.tiles[tile + i] = make_int2(e, row + i * rows);
    for (int r = row + count; r < row + tiles * rows; ++r) plan.sorted_pairs[r] = -1;
    tile += tiles;
  }
  if (threadIdx.x == 0) {
    plan.offsets[local_experts] = tile_total * rows;
    *plan.tile_count = tile_total;
  }
  __syncthreads();

  for (int p0 = begin; p0 < end; p0 += rounds * 32) {
    int e[rounds];
    load(p0, e);
#pragma unroll
    for (int r = 0; r < rounds; ++r) {
      const unsigned same = __match_any_sync(0xffffffffu, e[r]);
      if (e[r] >= 0) plan.sorted_pairs[first_row[e[r]] + mine[e[r]] + __popc(same & below)] = p0 + r * 32 + lane;
      __syncwarp();
      if (e[r] >= 0 && (same & below) == 0) mine[e[r]] += __popc(same);
      __syncwarp();
    }
  }
}

static void launch(const int* chosen, int pairs, int first_expert, int local_experts, const moe_plan& plan,
                   size_t shared, cudaStream_t stream) {
  // Whole rounds of 32 per warp, so every load of `chosen` is one coalesced row.
  const int chunk = ((pairs + warps - 1) / warps + 31) / 32 * 32;
  moe_align_kernel<<<1, threads, shared, stream>>>(chosen, pairs, chunk, first_expert, local_experts, plan);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void moe_align(const int* chosen, int pairs, int first_expert, int local_experts, const moe_plan& plan,
               cudaStream_t stream) {
  TROUPE_CHECK(pairs >= 0 && local_experts > 0, "bad shape");
  TROUPE_CHECK(plan.tile_rows > 0, "bad tile height");
  TROUPE_CHECK(plan.max_tiles >= moe_max_tiles(pairs, local_experts, plan.tile_rows), "plan too small for the batch");
  const size_t shared = sizeof(int) * (size_t(warps + 1) * local_experts + warps);
  TROUPE_CHECK(shared <= max_shared, "too many local experts for one block");
  launch(chosen, pairs, first_expert, local_experts, plan, shared, stream);
}

}  // namespace troupe::cuda
