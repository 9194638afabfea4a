#pragma once

namespace troupe::cpu {

// Depthwise causal convolution along the tokens of one sequence, then SiLU: the short
// convolution of Gated DeltaNet layers. x and out: [tokens, channels]; weight:
// [channels, kernel], whose last tap multiplies the current token. state holds the
// kernel - 1 inputs before x, [kernel - 1, channels] oldest first (zeros before a
// sequence's first token), and is updated to the last kernel - 1 inputs, so a prompt in
// one call, in pieces, or token by token (decode) gives the same outputs. out may not be x.
void causal_conv1d_silu(const float* x, int tokens, int channels, const float* weight, int kernel, float* state,
                        float* out);

}  // namespace troupe::cpu
