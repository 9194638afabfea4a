// libFuzzer: every JSON request parser of the HTTP API (tests/fuzz/README.md), the
// Responses and Anthropic Messages bodies included. The first
// byte picks the endpoint; the rest is the body. Any bytes end in a request or in a 4xx
// error with a message, never an exception, a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.hpp"
#include "gateway/admin/admin_replicas_json.hpp"
#include "gateway/admin/admin_traffic_json.hpp"
#include "gateway/anthropic/anthropic_request_json.hpp"
#include "gateway/json_body.hpp"
#include "gateway/openai/chat_request_json.hpp"
#include "gateway/openai/generation_request_json.hpp"
#include "gateway/openai/openai_endpoints.hpp"
#include "gateway/openai/responses_request_json.hpp"

namespace {

void check(const troupe::api_error& e) {
  TROUPE_CHECK(e.status >= 400 && e.status < 500, "a request error outside 4xx");
  TROUPE_CHECK(!e.message.empty(), "an error without a message");
  TROUPE_CHECK(!e.to_json().empty(), "an error that does not print");
}

template <class Result>
void check(const Result& r) {
  if (!r) check(r.err());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 9) {
    case 0:
      check(parse_chat_request(body, tool_call_format::hermes));
      break;
    case 1:
      check(parse_chat_request(body, tool_call_format::xml));
      break;
    case 2:
      check(parse_completion_request(body));
      break;
    case 3:
      if (auto j = parse_json_object(body)) check(parse_tokenize_request(*j));
      break;
    case 4:
      check(parse_detokenize_request(body));
      break;
    case 5:
      check(parse_traffic_request(body));
      break;
    case 6:
      check(parse_replica_change("green/add", body));
      break;
    case 7:
    case 8:
      // A Responses or Messages body becomes a chat body, which must then parse or fail
      // like any client's.
      if (auto j = parse_json_object(body)) {
        auto chat = data[0] % 9 == 7 ? [&] {
          auto r = parse_responses_request(*j, nullptr);
          return r ? result<nlohmann::ordered_json, api_error>(r->chat_body) : r.err();
        }() : parse_anthropic_request(*j);
        check(chat);
        if (chat) check(parse_chat_object(*chat, tool_call_format::hermes));
      }
      break;
  }
  return 0;
}
