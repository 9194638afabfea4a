#include "kernels/cuda/check.cuh"

#include <cstdio>
#include <cstdlib>

namespace troupe::cuda {

void fail(const char* file, int line, const char* call, const char* what) {
  std::fprintf(stderr, "troupe: CUDA error at %s:%d: %s: %s\n", file, line, call, what);
  std::abort();
}

}  // namespace troupe::cuda
