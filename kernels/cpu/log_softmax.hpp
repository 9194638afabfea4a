#pragma once

namespace troupe::cpu {

// out = x - logsumexp(x) over `n` values, summed in double so large vocabularies keep
// full fp32 accuracy. out may be x.
void log_softmax(const float* x, int n, float* out);

}  // namespace troupe::cpu
