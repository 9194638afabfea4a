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

__device__ inline void allow_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }

// The usual opening: the predecessor's writes visible, then the successor let in.
__device__ inline void begin_dependent() {
  wait_for_previous();
  allow_dependents();
}

// launch_dependent in thread block clusters of `cluster` blocks along x (the grid's x a
// multiple of it); 0 launches without clusters.
template <class... Params, class... Args>
void launch_dependent_clusters(void (*kernel)(Params...), dim3 grid, unsigned cluster, dim3 block, size_t shared,
                               cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attributes[2] = {};
  attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[0].val.programmaticStreamSerializationAllowed = 1;
  attributes[1].id = cudaLaunchAttributeClusterDimension;
  attributes[1].val.clusterDim.x = cluster;
  attributes[1].val.clusterDim.y = 1;
  attributes[1].val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = cluster == 0 ? 1 : 2;
  TROUPE_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, Params(args)...));
}

template <class... Params, class... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                      Args... args) {
  launch_dependent_clusters(kernel, grid, 0, block, shared, stream, args...);
}

}  // namespace troupe::cuda
