#pragma once
// cp.async: 16-byte (and 4-byte) copies from global to shared memory that run while the thread goes on,
// grouped by commit_copies() and waited for by wait_copies<n>() (all but the newest n
// groups of this thread have landed; other threads' copies need a barrier besides).
#include <cuda_runtime.h>

namespace troupe::cuda {

// A null src reads nothing and writes 16 zero bytes (source size 0): masked rows hold 0,
// never whatever memory holds there (0 * NaN would spread).
__device__ inline void copy_16(void* dst, const void* src) {
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(src), "r"(src != nullptr ? 16 : 0));
}

// 4 bytes (two bf16), through L1; both addresses 4-byte aligned.
__device__ inline void copy_4(void* dst, const void* src) {
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(to), "l"(src));
}

__device__ inline void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

template <int pending>
__device__ inline void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

}  // namespace troupe::cuda
