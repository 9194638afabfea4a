#pragma once
// One benchmark request: a streamed completion or chat completion, timed chunk by chunk.
#include <string>
#include <vector>

#include "base/result.hpp"
#include "bench/http_client.hpp"
#include "bench/random_dataset.hpp"
#include "bench/stream_event.hpp"

namespace troupe::bench {

// What every request of a run shares.
struct request_spec {
  std::string endpoint = "/v1/completions";
  api_kind kind = api_kind::completions;
  std::string model;
  std::string api_key;
  bool ignore_eos = true;
  double temperature = 0;  // 0: greedy
};

struct request_outcome {
  bool success = false;
  std::string error;          // why it failed: transport, HTTP status, an error event
  int prompt_tokens = 0;      // from the usage event, else the dataset's length
  int output_tokens = 0;      // from the usage event, else the number of content chunks
  double ttft_s = 0;          // to the first content chunk (to the end when none came)
  std::vector<double> itl_s;  // between content chunks
  double e2e_s = 0;
  std::string text;  // every content chunk, in order
};

std::string request_body(const request_spec& spec, const bench_prompt& prompt);
request_outcome send_request(http_client& http, const request_spec& spec, const bench_prompt& prompt);

// The first model GET /v1/models lists: what the server serves when --model is not given.
result<std::string> first_model_id(http_client& http, const std::string& api_key);

}  // namespace troupe::bench
