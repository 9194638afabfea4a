#pragma once
// Helpers of the GPU op tests: device copies of host vectors, random bf16 inputs with their
// fp32 values for the CPU op, and the relative-error check with its tolerances. Include
// after <boost/test/unit_test.hpp> (and BOOST_TEST_MODULE).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "base/dtype.hpp"
#include "kernels/cuda/check.cuh"
#include "tests/support/random.hpp"

namespace troupe::test {

// bf16 keeps 8 significant bits: one rounding is a relative error up to 2^-9 (about 2e-3)
// per element, so ||out - ref|| / ||ref|| of a bf16 output lands near 1e-3 to 4e-3.
// 1e-2 leaves room for that and fp32 summation order, and still catches a wrong element.
inline constexpr double bf16_tolerance = 1e-2;
// fp32 outputs computed from the same inputs differ only in summation order.
inline constexpr double f32_tolerance = 1e-5;
inline constexpr uint16_t bf16_nan = 0x7fc0;

// A device copy of a host vector, freed with the object.
template <class T>
class device_buffer {
 public:
  explicit device_buffer(const std::vector<T>& host) : size_(host.size()) {
    TROUPE_CUDA_CHECK(cudaMalloc(&ptr_, std::max<size_t>(size_, 1) * sizeof(T)));
    TROUPE_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  device_buffer(size_t size, T poison) : device_buffer(std::vector<T>(size, poison)) {}
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { cudaFree(ptr_); }
  T* get() { return ptr_; }
  // The bits of a uint16_t buffer as the device's bf16.
  __nv_bfloat16* bf16() { return reinterpret_cast<__nv_bfloat16*>(ptr_); }
  std::vector<T> to_host() const {
    TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> host(size_);
    TROUPE_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t size_;
};

inline std::vector<float> to_f32(const std::vector<uint16_t>& bits) {
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = bf16_to_f32(bits[i]);
  return v;
}

// Random bf16 values: `bits` for the device, the same values in fp32 for the CPU op.
struct bf16_values {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};

inline bf16_values random_bf16(size_t n, uint32_t seed, float scale = 1.0f) {
  const std::vector<float> floats = random_floats(n, seed, scale);
  bf16_values r;
  r.bits.resize(n);
  for (size_t i = 0; i < n; ++i) r.bits[i] = f32_to_bf16(floats[i]);
  r.values = to_f32(r.bits);
  return r;
}

// ||out - ref|| / ||ref||; a non-finite output element fails the test outright.
inline double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
  BOOST_REQUIRE_EQUAL(out.size(), ref.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    BOOST_REQUIRE_MESSAGE(std::isfinite(out[i]), "element " << i << " is " << out[i]);
    num += double(out[i] - ref[i]) * (out[i] - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

inline void expect_close(const std::string& what, const std::vector<float>& out, const std::vector<float>& ref,
                         double tolerance) {
  const double err = relative_error(out, ref);
  BOOST_TEST_MESSAGE(what << ": relative error " << err << " (tolerance " << tolerance << ")");
  BOOST_TEST(err < tolerance, what << ": relative error " << err);
}

inline std::vector<int> random_ints(size_t n, int below, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, below - 1);
  std::vector<int> v(n);
  for (int& x : v) x = dist(gen);
  return v;
}

// k distinct experts of `experts` per token in random order, with weights in (0, 1).
struct routing {
  std::vector<int> chosen;
  std::vector<float> weights;
};

inline routing random_routing(int tokens, int experts, int k, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> weight(0.05f, 1.0f);
  std::vector<int> ids(static_cast<size_t>(experts));
  std::iota(ids.begin(), ids.end(), 0);
  routing r;
  for (int t = 0; t < tokens; ++t) {
    std::shuffle(ids.begin(), ids.end(), gen);
    for (int j = 0; j < k; ++j) {
      r.chosen.push_back(ids[size_t(j)]);
      r.weights.push_back(weight(gen));
    }
  }
  return r;
}

}  // namespace troupe::test
