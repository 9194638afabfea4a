#pragma once
// The bytes of one MoE dispatch between processes (remote_experts sends them,
// expert_server answers): a request names one expert group's range and carries a layer's
// routed tokens; its reply carries that group's share of the output, or why there is none.
// A small fixed little-endian header, then the raw arrays. Decoding checks every size and
// value against the bytes received: bytes from a broken peer give an error, never a read
// past the end.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe {

struct dispatch_header {
  int layer = 0;
  int first_expert = 0, last_expert = 0;  // the group's range, [first, last)
  int tokens = 0, k = 0, hidden = 0;
};

struct dispatch_request {
  dispatch_header header;
  std::vector<float> x;        // [tokens, hidden]
  std::vector<int> chosen;     // [tokens, k]
  std::vector<float> weights;  // [tokens, k]
};

// x is [tokens, hidden]; chosen and weights are [tokens, k].
std::vector<uint8_t> encode_request(const dispatch_header& header, const float* x, const int* chosen,
                                    const float* weights);
result<dispatch_request> decode_request(const std::vector<uint8_t>& bytes);

// A share of `count` floats, or the error that stands for it.
std::vector<uint8_t> encode_reply(const float* out, size_t count);
std::vector<uint8_t> encode_error_reply(const std::string& message);
// Copies a share of exactly `count` floats into `out`. An error reply gives its message;
// bytes that are no reply of `count` floats give an error saying so.
status decode_reply(const std::vector<uint8_t>& bytes, float* out, size_t count);

}  // namespace troupe
