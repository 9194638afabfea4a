#pragma once
#include <cuda_runtime.h>

namespace troupe::cuda {

// Router probabilities for `tokens` rows of `experts` fp32 logits: softmax, the k largest
// (ties to the lower index), renormalised to sum 1 when `normalize`. chosen and weights
// are [tokens, k], in descending weight. Device pointers; k <= experts, k <= 32 and
// experts <= 1024. Same contract as cpu::route_top_k per token.
//
// With `shared_expert`, a shared expert runs as expert slot `experts` (qwen3_5_moe's, when
// its width is the routed experts'): logits rows hold experts + 1 columns, the last its
// gate's logit, and chosen and weights are [tokens, k + 1], the last pick that slot with
// weight sigmoid(logit) (k + 1 <= 32).
void route_top_k(const float* logits, int tokens, int experts, int k, bool normalize, bool shared_expert, int* chosen,
                 float* weights, cudaStream_t stream);

}  // namespace troupe::cuda
