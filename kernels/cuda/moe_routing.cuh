#pragma once
#include <cuda_runtime.h>

namespace troupe::cuda {

// Router probabilities for `tokens` rows of `experts` fp32 logits: softmax, the k largest
// (ties to the lower index), renormalised to sum 1 when `normalize`. chosen and weights
// are [tokens, k], in descending weight. Device pointers; k <= experts, k <= 32 and
// experts <= 1024. Same contract as cpu::route_top_k per token.
void route_top_k(const float* logits, int tokens, int experts, int k, bool normalize, int* chosen,
                 float* weights, cudaStream_t stream);

}  // namespace troupe::cuda
