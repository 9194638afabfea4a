#pragma once
// What the benchmark reads from one event of an OpenAI stream: the text it adds, the usage
// figures (in the last event, with stream_options.include_usage) or an error a server
// reports in the middle of a stream.
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace troupe::bench {

enum class api_kind { completions, chat };

struct stream_event {
  bool done = false;       // "[DONE]"
  std::string content;     // choices[0].text, or choices[0].delta.content for chat
  int prompt_tokens = -1;  // -1: the event has no usage
  int completion_tokens = -1;
  std::string error;  // an error event's message
};

// An error when the data is not a JSON object.
result<stream_event> parse_stream_event(std::string_view data, api_kind kind);

}  // namespace troupe::bench
