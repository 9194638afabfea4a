#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// One expert-parallel rank's pair rows (fused_moe_rows): the experts [first_expert,
// last_expert) it serves, and y [tokens * k, hidden] fp32, valid at the pairs it serves.
struct moe_rows_part {
  int first_expert = 0, last_expert = 0;
  const float* y = nullptr;
};

inline constexpr int moe_combine_max_parts = 8;

// out[t] = y_j[t * k + j] summed over j < k in fp32 in j order and rounded once to bf16,
// where y_j is the rows of the part that serves chosen[t * k + j]: moe_combine's sum
// (bit for bit) over rows spread across ranks. A pair whose expert no part serves adds
// nothing. At most moe_combine_max_parts parts with disjoint ranges; chosen [tokens, k]
// global expert ids, out [tokens, hidden]; hidden % 4 == 0; device pointers, each y 16-byte
// and out 8-byte aligned.
void moe_combine_ranks(const moe_rows_part* parts, int count, const int* chosen, int tokens, int k, int hidden,
                       __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
