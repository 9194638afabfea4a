#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// The output gate of Qwen3.5's full-attention layers, before o_proj: x[t, i] *=
// sigmoid(gate[t, i]) for `tokens` rows of `width`, in fp32 and rounded once to bf16. x: bf16
// [tokens, width], in place; gate: bf16 token rows gate_stride elements apart (it may sit
// in the fused projection's row, q_proj's gate half moved there at load). Device pointers.
void output_gate(__nv_bfloat16* x, const __nv_bfloat16* gate, int gate_stride, int tokens, int width,
                 cudaStream_t stream);

}  // namespace troupe::cuda
