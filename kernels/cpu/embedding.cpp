#include "kernels/cpu/embedding.hpp"

#include "base/check.hpp"

namespace troupe::cpu {

void embedding(const weight_view& table, const int* ids, int tokens, float* out) {
  for (int t = 0; t < tokens; ++t) {
    TROUPE_CHECK(ids[t] >= 0 && ids[t] < table.rows, "token id outside the vocabulary");
    const void* row = table.row(ids[t]);
    float* o = out + int64_t(t) * table.cols;
    for (int64_t i = 0; i < table.cols; ++i) o[i] = load_as_f32(table.type, row, size_t(i));
  }
}

}  // namespace troupe::cpu
