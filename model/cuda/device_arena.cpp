#include "model/cuda/device_arena.hpp"

#include <utility>

#include <cuda_runtime.h>

namespace troupe {

result<device_arena> device_arena::allocate(size_t bytes, const std::string& what) {
  void* p = nullptr;
  if (const cudaError_t err = cudaMalloc(&p, bytes); err != cudaSuccess) {
    cudaGetLastError();  // an out-of-memory error is not sticky: clear it
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    return error{what + " needs " + std::to_string(bytes >> 20) + " MiB of GPU memory, " + std::to_string(free >> 20) +
                 " MiB are free (" + cudaGetErrorString(err) + ")"};
  }
  return device_arena(p, bytes);
}

device_arena::device_arena(device_arena&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), capacity_(other.capacity_), used_(other.used_) {}

device_arena& device_arena::operator=(device_arena&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) cudaFree(base_);
    base_ = std::exchange(other.base_, nullptr);
    capacity_ = other.capacity_;
    used_ = other.used_;
  }
  return *this;
}

device_arena::~device_arena() {
  if (base_ != nullptr) cudaFree(base_);
}

}  // namespace troupe
