#pragma once
// Device memory from one cudaMalloc, carved into aligned pieces that go back together:
// the weights, a runner's activation buffers. Measure first (an arena with no memory
// hands out offsets only), then allocate exactly what the measure used.
#include <cstddef>
#include <string>

#include "base/check.hpp"
#include "base/result.hpp"

namespace troupe {

class device_arena {
 public:
  // An arena that only counts bytes: its pointers must not be used.
  static device_arena measure() { return device_arena(nullptr, ~size_t(0)); }
  // `bytes` of device memory; an error naming `what` when the device has too little.
  static result<device_arena> allocate(size_t bytes, const std::string& what);

  device_arena(device_arena&& other) noexcept;
  device_arena& operator=(device_arena&& other) noexcept;
  device_arena(const device_arena&) = delete;
  device_arena& operator=(const device_arena&) = delete;
  ~device_arena();

  template <class T>
  T* take(size_t count) {
    used_ = (used_ + alignment - 1) / alignment * alignment;
    TROUPE_CHECK(count * sizeof(T) <= capacity_ - used_, "device arena overrun");
    T* p = reinterpret_cast<T*>(static_cast<char*>(base_) + used_);
    used_ += count * sizeof(T);
    return p;
  }
  size_t used() const { return used_; }
  // Hands the memory out again from the start: its previous user must be gone (a restarted
  // stage re-carves the memory its crashed predecessor had).
  void reset() { used_ = 0; }

 private:
  static constexpr size_t alignment = 256;
  device_arena(void* base, size_t capacity) : base_(base), capacity_(capacity) {}
  void* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

}  // namespace troupe
