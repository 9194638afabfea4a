// Every CUDA op against the CPU op on random inputs of several shapes, odd sizes included.
#define BOOST_TEST_MODULE cuda_ops
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "kernels/cpu/rms_norm.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "tests/support/random.hpp"

using namespace troupe;

namespace {

// A device copy of a host vector, freed with the object.
class device_buffer {
 public:
  explicit device_buffer(const std::vector<float>& host) : size_(host.size()) {
    TROUPE_CUDA_CHECK(cudaMalloc(&ptr_, size_ * sizeof(float)));
    TROUPE_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), size_ * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~device_buffer() { cudaFree(ptr_); }
  float* get() { return ptr_; }
  std::vector<float> to_host() const {
    std::vector<float> host(size_);
    TROUPE_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, size_ * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  float* ptr_ = nullptr;
  size_t size_;
};

double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    BOOST_REQUIRE(std::isfinite(out[i]));
    num += double(out[i] - ref[i]) * (out[i] - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

BOOST_AUTO_TEST_CASE(rms_norm_matches_cpu) {
  for (int dim : {1, 7, 128, 2048, 4099}) {
    const int rows = 33;
    auto x = test::random_floats(size_t(rows) * dim, 1 + dim, 2.0f);
    auto w = test::random_floats(size_t(dim), 2 + dim);
    std::vector<float> ref(x.size());
    cpu::rms_norm(x.data(), w.data(), 1e-6f, rows, dim, ref.data());
    device_buffer dx(x), dw(w), dout(std::vector<float>(x.size(), NAN));
    cuda::rms_norm(dx.get(), dw.get(), 1e-6f, rows, dim, dout.get(), nullptr);
    TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
    BOOST_TEST_CONTEXT("dim " << dim) BOOST_TEST(relative_error(dout.to_host(), ref) < 1e-5);
  }
}
