#pragma once
#include <algorithm>

#include <cuda_runtime.h>

namespace troupe::cuda {

// A batch's (token, slot) pairs grouped by local expert, as moe_align leaves them for the
// expert tiles and moe_grouped. Pair p = t * k + j is token t's j-th choice. Expert e's
// pairs fill rows [offsets[e], offsets[e] + counts[e]) of sorted_pairs in ascending pair
// order, then -1 up to offsets[e + 1], a multiple of tile_rows away. Tile i covers rows [tiles[i].y,
// tiles[i].y + tile_rows) of expert tiles[i].x; *tile_count <= max_tiles of them are used.
// Device pointers into the caller's workspace, sized with moe_max_tiles; two host ints.
struct moe_plan {
  int tile_rows;
  int max_tiles;
  int* counts;        // [local_experts]
  int* offsets;       // [local_experts + 1]
  int* sorted_pairs;  // [max_tiles * tile_rows]
  int2* tiles;        // [max_tiles]
  int* tile_count;    // [1]
};

// At most this many tiles for `pairs` pairs: an expert with c pairs takes ceil(c /
// tile_rows) tiles, and at most min(pairs, local_experts) experts have any.
inline int moe_max_tiles(int pairs, int local_experts, int tile_rows) {
  const int used = std::min(pairs, local_experts);
  return (pairs + used * (tile_rows - 1)) / tile_rows;
}

// Fills `plan` from chosen [pairs] global expert ids: those in [first_expert, first_expert
// + local_experts) are local, the others belong to no tile. One block does it all (tokens
// * k is at most tens of thousands), so the stable order needs no merge across blocks.
void moe_align(const int* chosen, int pairs, int first_expert, int local_experts, const moe_plan& plan,
               cudaStream_t stream);

}  // namespace troupe::cuda
