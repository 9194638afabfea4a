#pragma once
// Programmatic dependent launch. A kernel launched with launch_dependent() may be put on
// the SMs while the kernel before it in the stream is still running, so the gap between
// two small kernels of a decode step (launch latency, block scheduling) overlaps the tail
// of the first. In exchange the kernel must call wait_for_previous() before it reads
// anything an earlier kernel wrote or writes anything one reads, and every thread calls it
// before exiting (so no grid ever completes before its predecessor, and "the kernel before
// finished" stays transitive). Work that depends on no earlier kernel (loading weights)
// may come first. allow_dependents() lets the next kernel be launched early.
#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

__device__ inline void wait_for_previous() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

__device__ inline void allow_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// The usual opening: the predecessor's writes visible, then the successor let in.
__device__ inline void begin_dependent() {
  wait_for_previous();
  allow_dependents();
}

template <class... Params, class... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                      cudaStream_t stream, Args... args) {
  cudaLaunchAttribute early;
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &early;
  config.numAttrs = 1;
  TROUPE_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, Params(args)...));
}

}  // namespace troupe::cuda
