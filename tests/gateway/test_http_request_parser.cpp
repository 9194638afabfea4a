// The request parser on its own: framing, pipelining, limits, and what it answers.
#define BOOST_TEST_MODULE http_request_parser
#include <boost/test/unit_test.hpp>

#include <string>

#include "gateway/http/request_parser.hpp"

using namespace troupe::http;

namespace {

struct outcome {
  parsed_request parsed{};
  bool complete = false;
  int error = 0;
  size_t used = 0;
};

// Feeds `bytes` in pieces of `piece` bytes until a request is complete or parsing fails.
outcome parse(std::string_view bytes, size_t piece = 1 << 20, size_t max_header = 1024, size_t max_body = 64) {
  request_parser p(max_header, max_body);
  outcome o;
  while (o.used < bytes.size() && !p.complete() && !p.failed()) o.used += p.feed(bytes.substr(o.used, piece));
  o.complete = p.complete();
  o.error = p.error_status();
  if (o.complete) o.parsed = p.take();
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(parses_method_target_headers_and_body) {
  auto o = parse(
      "POST /v1/chat/completions?stream=1#frag HTTP/1.1\r\nHost: x\r\nX-Key:  abc \t\r\n"
      "Content-Length: 5\r\n\r\nhello");
  BOOST_REQUIRE(o.complete);
  const request& r = o.parsed.message;
  BOOST_TEST(r.method == "POST");
  BOOST_TEST(r.path == "/v1/chat/completions");
  BOOST_TEST(r.query == "stream=1");
  BOOST_TEST(r.header_value("x-key") == "abc");
  BOOST_TEST(r.header_value("HOST") == "x");
  BOOST_TEST(r.header_value("missing").empty());
  BOOST_TEST(r.body == "hello");
  BOOST_TEST(o.parsed.keep_alive);
  BOOST_TEST(!o.parsed.http_1_0);
}

BOOST_AUTO_TEST_CASE(gives_the_same_request_whatever_the_pieces) {
  std::string bytes =
      "POST /a?b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nX-Long-Header-Name: value\r\n\r\n"
      "3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
  for (size_t piece : {1, 2, 3, 7, 1000}) {
    auto o = parse(bytes, piece);
    BOOST_REQUIRE(o.complete);
    BOOST_TEST(o.used == bytes.size());
    BOOST_TEST(o.parsed.message.path == "/a");
    BOOST_TEST(o.parsed.message.header_value("x-long-header-name") == "value");
    BOOST_TEST(o.parsed.message.body == "abc0123456789abcdef");
  }
}

BOOST_AUTO_TEST_CASE(stops_at_the_end_of_each_pipelined_request) {
  std::string first = "GET /1 HTTP/1.1\r\n\r\n", second = "GET /2 HTTP/1.1\r\nConnection: close\r\n\r\n";
  std::string bytes = first + second;
  request_parser p(1024, 64);
  size_t used = p.feed(bytes);
  BOOST_TEST(used == first.size());
  BOOST_REQUIRE(p.complete());
  BOOST_TEST(p.feed(bytes.substr(used)) == 0u);  // nothing until the first is taken
  BOOST_TEST(p.take().message.path == "/1");
  BOOST_TEST(p.feed(std::string_view(bytes).substr(used)) == second.size());
  BOOST_REQUIRE(p.complete());
  parsed_request r = p.take();
  BOOST_TEST(r.message.path == "/2");
  BOOST_TEST(!r.keep_alive);
}

BOOST_AUTO_TEST_CASE(http_1_0_and_absolute_targets) {
  auto o = parse("GET http://example.com/v1/models?x=y HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  BOOST_REQUIRE(o.complete);
  BOOST_TEST(o.parsed.http_1_0);
  BOOST_TEST(!o.parsed.keep_alive);  // HTTP/1.0 always closes after the response
  BOOST_TEST(o.parsed.message.path == "/v1/models");
  BOOST_TEST(o.parsed.message.query == "x=y");
  o = parse("GET http://example.com HTTP/1.1\r\n\r\n");
  BOOST_REQUIRE(o.complete);
  BOOST_TEST(o.parsed.message.path == "/");
  o = parse("GET http://example.com?q HTTP/1.1\r\n\r\n");
  BOOST_REQUIRE(o.complete);
  BOOST_TEST(o.parsed.message.path == "/");
  BOOST_TEST(o.parsed.message.query == "q");
}

BOOST_AUTO_TEST_CASE(asks_for_100_continue_only_when_a_body_is_awaited) {
  request_parser p(1024, 64);
  p.feed("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n");
  BOOST_TEST(p.take_continue());
  BOOST_TEST(!p.take_continue());
  p.feed("ok");
  BOOST_REQUIRE(p.complete());
  BOOST_TEST(p.take().message.body == "ok");
  p.feed("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
  BOOST_TEST(!p.take_continue());
}

BOOST_AUTO_TEST_CASE(answers_malformed_and_oversized_requests) {
  BOOST_TEST(parse("\x01\x02garbage\r\n\r\n").error == 400);
  BOOST_TEST(parse("GET / HTTP/1.1\r\nBad Header\r\n\r\n").error == 400);
  BOOST_TEST(parse("POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello").error == 400);
  BOOST_TEST(parse("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n").error == 400);
  BOOST_TEST(parse("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").error == 400);
  BOOST_TEST(parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n").error == 400);
  BOOST_TEST(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").error == 400);
  BOOST_TEST(parse("GET / HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n").error == 431);
  BOOST_TEST(parse("GET /" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n", 100).error == 431);
  std::string many_headers = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 300; ++i) many_headers += "A:\r\n";
  BOOST_TEST(parse(many_headers + "\r\n").error == 431);
  BOOST_TEST(parse("POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n").error == 413);
  BOOST_TEST(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'x') +
                   "\r\n1\r\nx\r\n0\r\n\r\n")
                 .error == 413);
  BOOST_TEST(parse("POST / HTTP/1.1\r\nContent-Length: 64\r\n\r\n" + std::string(64, 'x')).complete);
  request_parser p(1024, 64);
  p.feed("BREW /pot HTTP/1.1\r\n\r\n");
  BOOST_TEST(p.failed());
  BOOST_TEST(p.error_message().find("malformed request") == 0u);
}
