#pragma once

namespace troupe::cpu {

// Router probabilities for one token: softmax over `experts` logits, the `k` largest
// (ties to the lower index, as torch.topk on CPU), renormalised to sum 1 when `normalize`.
void route_top_k(const float* logits, int experts, int k, bool normalize, int* chosen, float* weights);

}  // namespace troupe::cpu
