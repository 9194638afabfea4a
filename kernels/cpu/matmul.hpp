#pragma once
#include "base/weight_view.hpp"

namespace troupe::cpu {

// y[m, w.rows] = x[m, w.cols] * w^T, fp32 accumulation, any weight dtype. Threads split
// the weight rows, so each weight byte is read once per call whatever m is.
void matmul(const float* x, int m, const weight_view& w, float* y);

}  // namespace troupe::cpu
