#include "kernels/cuda/fused_moe.cuh"

#include <algorithm>
#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/moe_align.cuh"
#include "kernels/cuda/moe_combine.cuh"
#include "kernels/cuda/moe_down.cuh"
#include "kernels/cuda/moe_gate_up.cuh"
#include "kernels/cuda/moe_gemv.cuh"
#include "kernels/cuda/moe_grouped.cuh"
#include "kernels/cuda/moe_stream.cuh"
#include "kernels/cuda/moe_tile_gemm.cuh"

namespace troupe::cuda {

static constexpr int decode_rows = moe_stream::rows;
static constexpr int prefill_rows = moe_tile::prefill::rows;
// Pairs per local expert from which a caller with a cuBLAS handle gets moe_grouped: on the
// H200 at 512 tokens (32 an expert) fused_moe takes 0.386 ms there against 0.466 ms in
// 64-row tiles, though moe_grouped waits for the stream.
static constexpr int grouped_rows = 32;

// The workspace's parts, each 256-byte aligned from `base` (sizes only when base is null).
// Room for every path, so one workspace serves every batch size; the paths share act (or
// moe_grouped's gate) and y (or moe_grouped's rows).
struct workspace_parts {
  moe_plan plan;
  __nv_bfloat16* act;
  float* y;
  moe_grouped_scratch grouped;
  size_t bytes;
};

static workspace_parts carve(char* base, int tokens, int k, int local_experts, int hidden, int inter, int tile_rows) {
  const int pairs = tokens * k;
  const int decode_tiles = moe_max_tiles(pairs, local_experts, decode_rows);
  const int prefill_tiles = moe_max_tiles(pairs, local_experts, prefill_rows);
  // moe_grouped's pieces pad each expert by less than the mean count (rounded up to 64 rows).
  const size_t padded = size_t(pairs) * 2 + size_t(64) * local_experts;
  const size_t rows = std::max({size_t(decode_tiles) * decode_rows, size_t(prefill_tiles) * prefill_rows, padded});
  size_t used = 0;
  auto take = [&](size_t bytes) {
    char* part = base != nullptr ? base + used : nullptr;
    used += (bytes + 255) / 256 * 256;
    return part;
  };
  workspace_parts parts;
  parts.plan.tile_rows = tile_rows;
  parts.plan.max_tiles = moe_max_tiles(pairs, local_experts, tile_rows);
  parts.plan.counts = reinterpret_cast<int*>(take(sizeof(int) * local_experts));
  parts.plan.offsets = reinterpret_cast<int*>(take(sizeof(int) * (local_experts + 1)));
  parts.plan.sorted_pairs = reinterpret_cast<int*>(take(sizeof(int) * rows));
  parts.plan.tiles = reinterpret_cast<int2*>(take(sizeof(int2) * std::max(decode_tiles, prefill_tiles)));
  parts.plan.tile_count = reinterpret_cast<int*>(take(sizeof(int)));
  parts.act = reinterpret_cast<__nv_bfloat16*>(take(sizeof(__nv_bfloat16) * rows * inter));
  parts.y = reinterpret_cast<float*>(
      take(std::max(sizeof(float) * size_t(pairs) * hidden, sizeof(__nv_bfloat16) * rows * hidden)));
  parts.grouped.capacity = int(rows);
  parts.grouped.rows = reinterpret_cast<__nv_bfloat16*>(parts.y);
  parts.grouped.gate = parts.act;
  parts.grouped.up = reinterpret_cast<__nv_bfloat16*>(take(sizeof(__nv_bfloat16) * rows * inter));
  parts.grouped.row_of_pair = reinterpret_cast<int*>(take(sizeof(int) * size_t(pairs)));
  parts.grouped.matrices = reinterpret_cast<void**>(take(sizeof(void*) * 18 * local_experts));
  parts.grouped.pieces = reinterpret_cast<int2*>(take(sizeof(int2) * 2 * local_experts));
  parts.bytes = used;
  return parts;
}

size_t fused_moe_workspace_bytes(int max_tokens, int k, int local_experts, int hidden, int inter) {
  TROUPE_CHECK(max_tokens >= 0 && k > 0 && local_experts > 0 && hidden > 0 && inter > 0, "bad shape");
  return carve(nullptr, max_tokens, k, local_experts, hidden, inter, decode_rows).bytes;
}

void fused_moe(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
               const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
               void* workspace, __nv_bfloat16* out, cudaStream_t stream, cublasHandle_t cublas) {
  TROUPE_CHECK(tokens >= 0 && k > 0 && first_expert >= 0 && last_expert > first_expert, "bad shape");
  TROUPE_CHECK(uintptr_t(workspace) % 256 == 0, "workspace must be 256-byte aligned");
  if (tokens == 0) return;
  const int local_experts = last_expert - first_expert, pairs = tokens * k;
  const bool grouped = cublas != nullptr && pairs >= grouped_rows * local_experts;
  // Under 16 pairs per expert most experts fit one 16-row tile, and each expert's weights
  // are read once either way; from there 64-row tiles reuse each weight chunk 4 times more.
  const int tile_rows = !grouped && pairs >= 16 * local_experts ? prefill_rows : decode_rows;
  workspace_parts parts = carve(static_cast<char*>(workspace), tokens, k, local_experts, hidden, inter, tile_rows);
  if (grouped) {
    moe_align(chosen, pairs, first_expert, local_experts, parts.plan, stream);
    moe_grouped(cublas, x, tokens, hidden, chosen, weights, k, w13, w2, inter, first_expert, last_expert, parts.plan,
                parts.grouped, out, stream);
    return;
  }
  if (pairs <= moe_gemv_pairs) {
    moe_gemv(x, tokens, hidden, chosen, weights, k, w13, w2, inter, first_expert, last_expert, parts.act, out, stream);
    return;
  }
  moe_align(chosen, pairs, first_expert, local_experts, parts.plan, stream);
  moe_gate_up(x, hidden, k, w13, inter, parts.plan, parts.act, stream);
  moe_down(parts.act, inter, w2, hidden, weights, parts.plan, parts.y, stream);
  moe_combine(parts.y, chosen, tokens, k, hidden, first_expert, last_expert, out, stream);
}

void fused_moe_rows(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
                    const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                    int num_experts, void* workspace, float* y, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && k > 0 && first_expert >= 0 && last_expert > first_expert && last_expert <= num_experts,
               "bad shape");
  TROUPE_CHECK(uintptr_t(workspace) % 256 == 0, "workspace must be 256-byte aligned");
  if (tokens == 0) return;
  const int local_experts = last_expert - first_expert, pairs = tokens * k;
  // fused_moe's choice without a handle, made for the whole model's experts.
  const int tile_rows = pairs >= 16 * num_experts ? prefill_rows : decode_rows;
  workspace_parts parts = carve(static_cast<char*>(workspace), tokens, k, local_experts, hidden, inter, tile_rows);
  if (pairs <= moe_gemv_pairs) {
    moe_gemv_rows(x, tokens, hidden, chosen, weights, k, w13, w2, inter, first_expert, last_expert, parts.act, y,
                  stream);
    return;
  }
  moe_align(chosen, pairs, first_expert, local_experts, parts.plan, stream);
  moe_gate_up(x, hidden, k, w13, inter, parts.plan, parts.act, stream);
  moe_down(parts.act, inter, w2, hidden, weights, parts.plan, y, stream);
}

}  // namespace troupe::cuda
