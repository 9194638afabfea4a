#pragma once
// The m16n8k16 tensor-core product the hand-written kernels share (decode and prefill
// attention, the MoE decode tiles), and packing two floats into its bf16 operand word.
#include <cstdint>

#include <cuda_bf16.h>

namespace troupe::cuda {

// c += a b: a the four A registers of a 16x16 bf16 tile, b0 and b1 the B registers of a
// 16x8 one, fp32 accumulate.
__device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  mma(c, a[0], a[1], a[2], a[3], b0, b1);
}

// lo in the low half, as the operand layouts want the lower column first.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

}  // namespace troupe::cuda
