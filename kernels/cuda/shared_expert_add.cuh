#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// Qwen3.5's shared expert joining the routed experts' sum: out[t, i] += sigmoid(gate[t]) *
// expert[t, i] for `tokens` rows of `width`, in fp32 and rounded once to bf16: the contract
// of cpu::shared_expert_add. out, expert: bf16 [tokens, width]; gate: fp32 [tokens], the
// shared_expert_gate projection. Device pointers.
void shared_expert_add(__nv_bfloat16* out, const __nv_bfloat16* expert, const float* gate, int tokens, int width,
                       cudaStream_t stream);

}  // namespace troupe::cuda
