#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/state_sequences.cuh"

namespace troupe::cuda {

inline constexpr int conv_max_kernel = 8;

// cpu::causal_conv1d_silu for every sequence of a step, a prompt's tokens (prefill) or one
// token each (decode) alike: the depthwise causal conv of Gated DeltaNet, then SiLU.
// x: bf16 token rows x_stride elements apart, of which the first `channels` are read (the
// conv's input may sit in a fused projection's row); weight: fp32 [channels, kernel];
// states: the layer's fp32 pool [slots, kernel - 1, channels], each slot the kernel - 1
// inputs before the step (oldest first), left holding the last kernel - 1 inputs; out:
// bf16 [tokens, channels], not x. Activations are bf16 as everywhere on the GPU (the matmul
// before writes them, the delta rule after reads them); the state stays fp32 as on the CPU,
// though it only ever holds bf16 values. Device pointers; kernel at most conv_max_kernel.
void causal_conv1d_silu(const __nv_bfloat16* x, int x_stride, int channels, const float* weight, int kernel,
                        const state_sequences& seqs, float* states, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
