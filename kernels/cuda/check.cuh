#pragma once
// Every CUDA runtime and cuBLAS call goes through TROUPE_CUDA_CHECK: a failure is reported
// with the file, line and call, then the process stops (a CUDA error leaves the context
// unusable).
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

[[noreturn]] void fail(const char* file, int line, const char* call, const char* what);

inline bool succeeded(cudaError_t err) { return err == cudaSuccess; }
inline bool succeeded(cublasStatus_t status) { return status == CUBLAS_STATUS_SUCCESS; }
inline const char* describe(cudaError_t err) { return cudaGetErrorString(err); }
inline const char* describe(cublasStatus_t status) { return cublasGetStatusString(status); }

}  // namespace troupe::cuda

#define TROUPE_CUDA_CHECK(call)                                                                  \
  do {                                                                                           \
    const auto troupe_status_ = (call);                                                          \
    if (!::troupe::cuda::succeeded(troupe_status_))                                              \
      ::troupe::cuda::fail(__FILE__, __LINE__, #call, ::troupe::cuda::describe(troupe_status_)); \
  } while (0)
