#include "kernels/cpu/matmul.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__AVX__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace troupe::cpu {
namespace {

constexpr int tile_rows = 8;  // weight rows converted to fp32 and reused across all tokens

void row_to_f32(const weight_view& w, int64_t r, float* out) {
  const void* src = w.row(r);
  if (w.type == dtype::f32) {
    std::copy_n(static_cast<const float*>(src), w.cols, out);
    return;
  }
  for (int64_t k = 0; k < w.cols; ++k) out[k] = load_as_f32(w.type, src, size_t(k));
}

float dot_f32(const float* a, const float* b, int64_t n) {
#if defined(__AVX__) && defined(__FMA__)
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), acc1);
  }
  acc0 = _mm256_add_ps(acc0, acc1);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc0), _mm256_extractf128_ps(acc0, 1));
  s = _mm_hadd_ps(s, s);
  s = _mm_hadd_ps(s, s);
  float sum = _mm_cvtss_f32(s);
#else
  float sum = 0.0f;
  int64_t k = 0;
#endif
  // The tails fuse explicitly, so both dots (and so a row's result whatever m is) round alike.
  for (; k < n; ++k) sum = std::fma(a[k], b[k], sum);
  return sum;
}

// Decode-sized inputs: dot straight from bf16 without converting the row first.
float dot_bf16(const float* x, const uint16_t* w, int64_t n) {
#if defined(__AVX__) && defined(__FMA__)
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  const __m128i zero = _mm_setzero_si128();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k + 8));
    // bf16 -> fp32 is a 16-bit shift: interleave zeros below each value.
    __m256 wa = _mm256_castsi256_ps(_mm256_set_m128i(_mm_unpackhi_epi16(zero, a), _mm_unpacklo_epi16(zero, a)));
    __m256 wb = _mm256_castsi256_ps(_mm256_set_m128i(_mm_unpackhi_epi16(zero, b), _mm_unpacklo_epi16(zero, b)));
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), wa, acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8), wb, acc1);
  }
  acc0 = _mm256_add_ps(acc0, acc1);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc0), _mm256_extractf128_ps(acc0, 1));
  s = _mm_hadd_ps(s, s);
  s = _mm_hadd_ps(s, s);
  float sum = _mm_cvtss_f32(s);
#else
  float sum = 0.0f;
  int64_t k = 0;
#endif
  for (; k < n; ++k) sum = std::fma(x[k], bf16_to_f32(w[k]), sum);
  return sum;
}

}  // namespace

void matmul(const float* x, int m, const weight_view& w, float* y) {
  const int64_t rows = w.rows, cols = w.cols;
  const int64_t tiles = (rows + tile_rows - 1) / tile_rows;
  if (m <= 2 && w.type == dtype::bf16) {
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; ++r) {
      const auto* wr = static_cast<const uint16_t*>(w.row(r));
      for (int i = 0; i < m; ++i) y[int64_t(i) * rows + r] = dot_bf16(x + int64_t(i) * cols, wr, cols);
    }
    return;
  }
#pragma omp parallel if (rows * cols * m > 32768)
  {
    std::vector<float> tile(static_cast<size_t>(tile_rows * cols));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t r0 = t * tile_rows, nr = std::min<int64_t>(tile_rows, rows - r0);
      for (int64_t j = 0; j < nr; ++j) row_to_f32(w, r0 + j, tile.data() + j * cols);
      for (int i = 0; i < m; ++i) {
        const float* xi = x + int64_t(i) * cols;
        float* yi = y + int64_t(i) * rows + r0;
        for (int64_t j = 0; j < nr; ++j) yi[j] = dot_f32(xi, tile.data() + j * cols, cols);
      }
    }
  }
}

}  // namespace troupe::cpu
