#pragma once
// A read-only 2-D weight in its checkpoint dtype: `rows` x `cols`, row-major, as
// Hugging Face stores Linear weights ([out_features, in_features]).
#include <cstdint>

#include "base/dtype.hpp"

namespace troupe {

struct weight_view {
  dtype type = dtype::f32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;

  const void* row(int64_t r) const { return static_cast<const char*>(data) + r * cols * int64_t(dtype_size(type)); }
  // Rows [first, first + count) as a view of their own.
  weight_view slice_rows(int64_t first, int64_t count) const { return {type, count, cols, row(first)}; }
};

}  // namespace troupe
