// The cuBLAS functions troupe calls, opening libcublas when the first handle is made
// rather than when a process starts. cuBLAS 13's libraries take 0.4 to 1.1 s and about
// 200 MB at load time, in every process that links them: a CPU cluster node's too, and
// a node restarted after a crash waits for it (chaos/REPORT.md). So troupe links these
// definitions in place of libcublas (as TensorFlow's cublas stub does); each forwards to
// the library's own function, found on its first call.
#include <dlfcn.h>

#include <cstdio>

#include <cublas_v2.h>

#include "base/check.hpp"

namespace {

void* cublas_library() {
  static void* const library = [] {
    void* opened = dlopen("libcublas.so." TROUPE_CUBLAS_SOVERSION, RTLD_NOW | RTLD_LOCAL);
    if (opened == nullptr) std::fprintf(stderr, "troupe: cannot load cuBLAS: %s\n", dlerror());
    return opened;
  }();
  return library;
}

// The library's definition of `name`. Only called once a handle exists, so the library
// is open.
void* real(const char* name) {
  void* f = dlsym(cublas_library(), name);
  TROUPE_CHECK(f != nullptr, name);
  return f;
}

// Calls f as a function of the arguments' types (the caller's parameters: the declared
// types, which C++'s overloads of some of these names keep decltype from naming).
template <typename R, typename... A>
R call(void* f, A... args) {
  return reinterpret_cast<R (*)(A...)>(f)(args...);
}

}  // namespace

// Each function resolves its real one once, on its first call.
#define TROUPE_FORWARD(R, name, ...)        \
  static void* const forward = real(#name); \
  return call<R>(forward, __VA_ARGS__)

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (cublas_library() == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  TROUPE_FORWARD(cublasStatus_t, cublasCreate_v2, handle);
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) { TROUPE_FORWARD(cublasStatus_t, cublasDestroy_v2, handle); }

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  TROUPE_FORWARD(cublasStatus_t, cublasSetStream_v2, handle, stream);
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  TROUPE_FORWARD(cublasStatus_t, cublasGetStream_v2, handle, stream);
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  TROUPE_FORWARD(cublasStatus_t, cublasSetWorkspace_v2, handle, workspace, bytes);
}

// Also asked about cublasCreate's failure to load the library.
const char* cublasGetStatusString(cublasStatus_t status) {
  if (cublas_library() == nullptr) return "cuBLAS could not be loaded (see the line above)";
  TROUPE_FORWARD(const char*, cublasGetStatusString, status);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  TROUPE_FORWARD(cublasStatus_t, cublasGemmEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
                 beta, C, Ctype, ldc, computeType, algo);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* const Aarray[], cudaDataType Atype,
                                   int lda, const void* const Barray[], cudaDataType Btype, int ldb, const void* beta,
                                   void* const Carray[], cudaDataType Ctype, int ldc, int batchCount,
                                   cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  TROUPE_FORWARD(cublasStatus_t, cublasGemmBatchedEx, handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda,
                 Barray, Btype, ldb, beta, Carray, Ctype, ldc, batchCount, computeType, algo);
}

}  // extern "C"
