#pragma once
// Every CUDA runtime call goes through TROUPE_CUDA_CHECK: a failure is reported with the
// file, line and call, then the process stops (a CUDA error leaves the context unusable).
#include <cuda_runtime.h>

namespace troupe::cuda {

[[noreturn]] void fail(const char* file, int line, const char* call, cudaError_t err);

}  // namespace troupe::cuda

#define TROUPE_CUDA_CHECK(call)                                                   \
  do {                                                                            \
    cudaError_t troupe_err_ = (call);                                             \
    if (troupe_err_ != cudaSuccess) ::troupe::cuda::fail(__FILE__, __LINE__, #call, troupe_err_); \
  } while (0)
