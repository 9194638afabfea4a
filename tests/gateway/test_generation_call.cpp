// Chat replies through generation_call: the model's tokens (the real Qwen3 tokenizer's
// encoding of recorded-style outputs) fed as sampled tokens come out as OpenAI's message
// and as stream deltas that add up to the same message.
#define BOOST_TEST_MODULE generation_call
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "gateway/generation_call.hpp"
#include "tests/support/qwen3_tokenizer.hpp"

using namespace troupe;
using json = nlohmann::json;

namespace {

constexpr int im_end = 151645;

std::shared_ptr<const tokenizer> qwen3() {
  return std::shared_ptr<const tokenizer>(&test::qwen3_tokenizer(), [](const tokenizer*) {});
}

chat_reply_parsing parsing(bool starts_in_reasoning, std::optional<tool_call_format> format) {
  return {starts_in_reasoning, format,
          std::make_shared<const std::vector<tool_spec>>(
              std::vector<tool_spec>{{"get_weather", {{"city", "string"}, {"days", "integer"}}}})};
}

// Runs one choice over `text` (then <|im_end|> when it ends with a stop), `per_event`
// tokens at a time; returns what the call sent (SSE text when streaming) and, after it,
// the response body.
std::pair<std::string, std::string> run(const std::string& text, bool stream, const chat_reply_parsing& p,
                                        size_t per_event, finish_reason end = finish_reason::stop) {
  generation_options options;
  options.model = "m";
  options.stream = stream;
  generation_call call(api_kind::chat, "chatcmpl-1", options, -1, false, {{{1, 2, 3}, {}}}, qwen3(), p);
  std::vector<int> ids = test::qwen3_tokenizer().encode(text).value();
  if (end == finish_reason::stop) ids.push_back(im_end);
  std::string sent = call.stream_start();
  for (size_t at = 0; at < ids.size(); at += per_event) {
    token_event ev;
    for (size_t i = at; i < std::min(ids.size(), at + per_event); ++i) ev.tokens.push_back({ids[i], 0.0f, {}});
    if (at + per_event >= ids.size()) ev.finish = uint8_t(end);
    bool cancel = false;
    sent += call.on_event(0, ev, cancel);
  }
  BOOST_REQUIRE(call.done());
  return {sent, call.response_body()};
}

// The stream's deltas put together as the SDK's stream helper does, checking that each
// call opens with its id, type, name and empty arguments.
json assemble(const std::string& sse) {
  json message{{"content", ""}, {"reasoning", ""}, {"reasoning_content", ""}, {"tool_calls", json::array()}};
  std::string finish;
  for (size_t at = 0; (at = sse.find("data: ", at)) != std::string::npos;) {
    const size_t end = sse.find("\n\n", at);
    const std::string payload = sse.substr(at + 6, end - at - 6);
    at = end;
    if (payload == "[DONE]") break;
    const json chunk = json::parse(payload);
    const json& choice = chunk["choices"][0];
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    const json& d = choice["delta"];
    if (d.contains("content"))
      message["content"] = message["content"].get<std::string>() + d["content"].get<std::string>();
    for (const char* name : {"reasoning", "reasoning_content"})
      if (d.contains(name)) message[name] = message[name].get<std::string>() + d[name].get<std::string>();
    for (const json& t : d.value("tool_calls", json::array())) {
      const size_t index = t["index"];
      json& calls = message["tool_calls"];
      if (index == calls.size()) {
        BOOST_TEST(t["id"].get<std::string>().starts_with("call_"));
        BOOST_TEST(t["type"] == "function");
        BOOST_TEST(t["function"]["arguments"] == "");
        calls.push_back(t);
        calls.back().erase("index");
      } else {
        BOOST_REQUIRE(index + 1 == calls.size());
        json& args = calls[index]["function"]["arguments"];
        args = args.get<std::string>() + t["function"]["arguments"].get<std::string>();
      }
    }
  }
  message["finish_reason"] = finish;
  return message;
}

// The final message in the same shape as assemble() gives.
json flatten(const std::string& body) {
  const json choice = json::parse(body)["choices"][0];
  const json& m = choice["message"];
  return {{"content", m["content"].is_null() ? "" : m["content"].get<std::string>()},
          {"reasoning", m.value("reasoning", "")},
          {"reasoning_content", m.value("reasoning_content", "")},
          {"tool_calls", m.value("tool_calls", json::array())},
          {"finish_reason", choice["finish_reason"]}};
}

// Ids are random per call: compare without them.
json without_ids(json m) {
  for (json& c : m["tool_calls"]) c.erase("id");
  return m;
}

json expect_both_ways(const std::string& text, const chat_reply_parsing& p) {
  const json whole = flatten(run(text, false, p, 1).second);
  for (size_t per_event : {1, 2, 5}) {
    const json streamed = assemble(run(text, true, p, per_event).first);
    BOOST_TEST(without_ids(streamed).dump() == without_ids(whole).dump(), "per_event " << per_event);
  }
  return without_ids(whole);
}

}  // namespace

BOOST_AUTO_TEST_CASE(hermes_call_after_reasoning_and_text) {
  const json m = expect_both_ways(
      "<think>\nThe user wants Beijing's weather. I should call get_weather.\n</think>\n\n"
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"北京\", \"days\": "
      "2}}\n</tool_call>",
      parsing(false, tool_call_format::hermes));
  BOOST_TEST(m["reasoning_content"] == "The user wants Beijing's weather. I should call get_weather.");
  BOOST_TEST(m["reasoning"] == m["reasoning_content"]);  // vLLM's newer name, streamed alike
  BOOST_TEST(m["content"] == "Let me check.");
  BOOST_REQUIRE(m["tool_calls"].size() == 1u);
  BOOST_TEST(m["tool_calls"][0]["type"] == "function");
  BOOST_TEST(m["tool_calls"][0]["function"]["name"] == "get_weather");
  BOOST_TEST(m["tool_calls"][0]["function"]["arguments"] == R"({"city":"北京","days":2})");
  BOOST_TEST(m["finish_reason"] == "tool_calls");
}

BOOST_AUTO_TEST_CASE(two_xml_calls_starting_in_reasoning) {
  const json m = expect_both_ways(
      "Two cities, two calls.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n"
      "<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>",
      parsing(true, tool_call_format::xml));
  BOOST_TEST(m["reasoning_content"] == "Two cities, two calls.");
  BOOST_TEST(m["content"] == "");
  BOOST_REQUIRE(m["tool_calls"].size() == 2u);
  BOOST_TEST(m["tool_calls"][0]["function"]["arguments"] == R"({"city":"Paris","days":3})");
  BOOST_TEST(m["tool_calls"][1]["function"]["arguments"] == R"({"city":"Rome"})");
  BOOST_TEST(m["finish_reason"] == "tool_calls");
}

BOOST_AUTO_TEST_CASE(content_is_null_when_the_reply_only_calls) {
  const auto [sent, body] = run("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>", false,
                                parsing(false, tool_call_format::hermes), 3);
  const json m = json::parse(body)["choices"][0]["message"];
  BOOST_TEST(m["content"].is_null());
  BOOST_TEST(!m.contains("reasoning_content"));
  BOOST_TEST(m["tool_calls"][0]["id"].get<std::string>().size() == 29u);
}

// Under a forced tool_choice the reply is calls alone: content null, and a call cut short
// by max_tokens dropped (finish_reason length), whole or streamed; no markup leaks.
BOOST_AUTO_TEST_CASE(a_forced_reply_is_calls_alone) {
  chat_reply_parsing forced = parsing(false, tool_call_format::hermes);
  forced.forced_calls = true;
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  const json whole = expect_both_ways(call, forced);
  BOOST_TEST(whole["tool_calls"].size() == 1u);
  BOOST_TEST(whole["finish_reason"] == "tool_calls");
  BOOST_TEST(json::parse(run(call, false, forced, 3).second)["choices"][0]["message"]["content"].is_null());

  const std::string cut = call + "\n<tool_call>\n{\"name\": \"get_weather\", \"argu";
  for (size_t per_event : {1, 4}) {
    const auto [body_sent, body] = run(cut, false, forced, per_event, finish_reason::length);
    const json choice = json::parse(body)["choices"][0];
    BOOST_TEST(choice["message"]["content"].is_null());
    BOOST_TEST(choice["message"]["tool_calls"].size() == 1u);
    BOOST_TEST(choice["finish_reason"] == "length");
    const std::string sse = run(cut, true, forced, per_event, finish_reason::length).first;
    BOOST_TEST(sse.find("<tool_call>") == std::string::npos);
    BOOST_TEST(assemble(sse)["content"] == "");
    BOOST_TEST(assemble(sse)["tool_calls"].size() == 1u);
  }
  // Unforced, the cut block is what the model said: content.
  const auto [sent, body] = run(cut, false, parsing(false, tool_call_format::hermes), 4, finish_reason::length);
  BOOST_TEST(json::parse(body)["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_tool_and_broken_block_are_content_and_the_reply_stops) {
  const std::string text = "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>";
  const json m = expect_both_ways(text, parsing(false, tool_call_format::hermes));
  BOOST_TEST(m["content"] == text);
  BOOST_TEST(m["tool_calls"].empty());
  BOOST_TEST(m["finish_reason"] == "stop");
}

BOOST_AUTO_TEST_CASE(without_tools_the_markup_is_plain_content_but_reasoning_is_split) {
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>";
  const json m = expect_both_ways("<think>\nhm\n</think>\n\n" + call, parsing(false, std::nullopt));
  BOOST_TEST(m["reasoning_content"] == "hm");
  BOOST_TEST(m["content"] == call);
  BOOST_TEST(m["finish_reason"] == "stop");
}

BOOST_AUTO_TEST_CASE(plain_answer_keeps_the_old_shape) {
  const auto [sent, body] = run("Hello there.", false, parsing(false, std::nullopt), 2);
  const json m = json::parse(body)["choices"][0]["message"];
  BOOST_TEST(m == (json{{"role", "assistant"}, {"content", "Hello there."}}));
}

// An engine failure after tokens were streamed ends the call with an SSE error event (and
// [DONE]), never a silent cut: the gateway writes stream_error() when failed().
BOOST_AUTO_TEST_CASE(an_engine_failure_mid_stream_becomes_an_error_event) {
  generation_options options;
  options.model = "m";
  options.stream = true;
  generation_call call(api_kind::chat, "chatcmpl-2", options, -1, false, {{{1, 2, 3}, {}}}, qwen3(),
                       parsing(false, {}));
  bool cancel = false;
  token_event first;
  for (int id : test::qwen3_tokenizer().encode("Hello there").value()) first.tokens.push_back({id, 0.0f, {}});
  const std::string sent = call.on_event(0, first, cancel);
  BOOST_TEST(sent.find("Hello") != std::string::npos);
  BOOST_TEST(!call.failed());
  token_event failure;
  failure.finish = uint8_t(finish_reason::error);
  failure.error_message = "no stage of the engine is available";
  BOOST_TEST(call.on_event(0, failure, cancel).empty());
  BOOST_REQUIRE(call.failed());
  BOOST_TEST(call.failure().status == 500);
  const std::string tail = call.stream_error(call.failure());
  BOOST_TEST(tail.rfind("data: {\"error\":", 0) == 0);
  BOOST_TEST(tail.find("no stage of the engine is available") != std::string::npos);
  BOOST_TEST(tail.substr(tail.size() - 14) == "data: [DONE]\n\n");
}
