// The stream side of `troupe bench`: SSE framing however the bytes come, and the events of
// OpenAI completion and chat streams.
#define BOOST_TEST_MODULE sse_reader
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/serve_client.hpp"
#include "bench/sse_reader.hpp"
#include "bench/stream_event.hpp"

using namespace troupe::bench;

namespace {

const std::string stream =
    "data: {\"choices\":[{\"text\":\"Hel\"}]}\n\n"
    ": a comment\n\n"
    "data: {\"choices\":[{\"text\":\"lo\"}]}\r\n\r\n"
    "event: message\ndata: first line\ndata: second line\n\n"
    "data: [DONE]\n\n";

std::vector<std::string> events_of(const std::vector<std::string>& pieces) {
  sse_reader r;
  std::vector<std::string> out;
  for (const auto& p : pieces) r.feed(p, [&](std::string_view d) { out.emplace_back(d); });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(events_come_out_whole_whatever_the_split) {
  const std::vector<std::string> expected{"{\"choices\":[{\"text\":\"Hel\"}]}", "{\"choices\":[{\"text\":\"lo\"}]}",
                                          "first line\nsecond line", "[DONE]"};
  BOOST_TEST(events_of({stream}) == expected);
  for (size_t cut = 0; cut <= stream.size(); ++cut)
    BOOST_TEST(events_of({stream.substr(0, cut), stream.substr(cut)}) == expected, "cut at " << cut);
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  BOOST_TEST(events_of(bytes) == expected);
  BOOST_TEST(events_of({"data: unfinished\n"}).empty());
}

BOOST_AUTO_TEST_CASE(completion_and_chat_events) {
  auto ev =
      parse_stream_event(R"({"object":"text_completion","choices":[{"index":0,"text":" world","finish_reason":null}]})",
                         api_kind::completions);
  BOOST_REQUIRE(ev);
  BOOST_TEST(ev->content == " world");
  BOOST_TEST(ev->completion_tokens == -1);
  ev = parse_stream_event(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})", api_kind::chat);
  BOOST_TEST(ev->content == "");
  ev = parse_stream_event(R"({"choices":[{"delta":{"content":"Hi"},"finish_reason":null}],"usage":null})",
                          api_kind::chat);
  BOOST_TEST(ev->content == "Hi");
  ev = parse_stream_event(R"({"choices":[],"usage":{"prompt_tokens":32,"completion_tokens":8,"total_tokens":40}})",
                          api_kind::completions);
  BOOST_TEST(ev->prompt_tokens == 32);
  BOOST_TEST(ev->completion_tokens == 8);
  BOOST_TEST(ev->content == "");
  BOOST_TEST(parse_stream_event("[DONE]", api_kind::chat)->done);
}

BOOST_AUTO_TEST_CASE(error_events_and_junk) {
  auto ev = parse_stream_event(R"({"error":{"message":"the engine failed","type":"internal_server_error"}})",
                               api_kind::completions);
  BOOST_TEST(ev->error == "the engine failed");
  ev = parse_stream_event(R"({"object":"error","message":"old vLLM","code":400})", api_kind::chat);
  BOOST_TEST(ev->error == "old vLLM");
  BOOST_TEST(!parse_stream_event("not json", api_kind::completions));
  BOOST_TEST(!parse_stream_event("[1,2]", api_kind::completions));
}

BOOST_AUTO_TEST_CASE(request_bodies) {
  bench_prompt p;
  p.ids = {1000, 2000};
  p.text = "the river";
  p.input_len = 2;
  p.output_len = 5;
  request_spec spec;
  spec.model = "m";
  const auto completion = nlohmann::json::parse(request_body(spec, p));
  BOOST_TEST(completion["prompt"] == nlohmann::json({1000, 2000}));
  BOOST_TEST(completion["max_tokens"] == 5);
  BOOST_TEST(completion["stream"] == true);
  BOOST_TEST(completion["stream_options"]["include_usage"] == true);
  BOOST_TEST(completion["temperature"] == 0);
  BOOST_TEST(completion["ignore_eos"] == true);
  spec.kind = api_kind::chat;
  spec.ignore_eos = false;
  const auto chat = nlohmann::json::parse(request_body(spec, p));
  BOOST_TEST(chat["messages"][0]["content"] == "the river");
  BOOST_TEST(chat["max_completion_tokens"] == 5);
  BOOST_TEST(!chat.contains("ignore_eos"));
  BOOST_TEST(!chat.contains("prompt"));
}
