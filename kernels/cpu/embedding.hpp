#pragma once
#include "base/weight_view.hpp"

namespace troupe::cpu {

// out[t] = table row ids[t], as fp32. Ids must be inside the table (checked).
void embedding(const weight_view& table, const int* ids, int tokens, float* out);

}  // namespace troupe::cpu
