// The HTTP server over real sockets: requests, keep-alive, streaming, closing, shutdown.
#define BOOST_TEST_MODULE http_server
#include <boost/test/unit_test.hpp>

#include <future>
#include <thread>

#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/pending_requests.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using test::http_client;
using troupe::test::eventually;

namespace {

std::string get(std::string_view target, std::string_view extra_headers = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: t\r\n" + std::string(extra_headers) + "\r\n";
}

}  // namespace

BOOST_AUTO_TEST_CASE(answers_with_status_headers_and_body) {
  auto server = test::start_server(test::echo);
  BOOST_TEST(server->port() > 0);
  http_client c(server->port());
  BOOST_REQUIRE(c.send("POST /v1/echo?x=1&y=2 HTTP/1.1\r\nHost: t\r\nX-Echo: hi\r\nContent-Length: 4\r\n\r\nbody"));
  auto r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->status == 200);
  BOOST_TEST(r->body == "POST /v1/echo?x=1&y=2\nbody");
  BOOST_TEST(r->header("content-type") == "text/plain");
  BOOST_TEST(r->header("content-length") == "26");
  BOOST_TEST(r->header("x-echo") == "hi");
  BOOST_TEST(r->header("date").ends_with(" GMT"));
  BOOST_TEST(r->keep_alive);
}

BOOST_AUTO_TEST_CASE(keeps_a_connection_alive_and_answers_pipelined_requests_in_order) {
  auto server = test::start_server(test::echo);
  http_client c(server->port());
  for (int i = 0; i < 5; ++i) {
    BOOST_REQUIRE(c.send(get("/one/" + std::to_string(i))));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "GET /one/" + std::to_string(i) + "?\n");
  }
  BOOST_REQUIRE(c.send(get("/a") + get("/b") + get("/c")));
  for (const char* path : {"/a", "/b", "/c"}) {
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "GET " + std::string(path) + "?\n");
  }
  BOOST_TEST(server->open_connections() == 1u);
}

BOOST_AUTO_TEST_CASE(streams_chunks_written_from_another_thread_as_they_come) {
  test::pending_requests pending;
  auto server = test::start_server(pending.handler());
  http_client c(server->port());
  BOOST_REQUIRE(c.send(get("/stream")));
  auto p = pending.next();
  p.responder->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  p.responder->write("data: first\n\n");
  BOOST_REQUIRE(c.read_until("data: first"));  // before the last chunk is even written
  p.responder->write("");                      // nothing: an empty chunk would end the body
  p.responder->write("data: second\n\n");
  p.responder->end();
  auto r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->header("transfer-encoding") == "chunked");
  BOOST_TEST(r->header("cache-control") == "no-cache");
  BOOST_TEST((r->pieces == std::vector<std::string>{"data: first\n\n", "data: second\n\n"}));
  BOOST_REQUIRE(c.send(get("/after")));  // keep-alive continues after end()
  auto next = pending.next();
  BOOST_TEST(next.request.path == "/after");
  next.responder->respond(204, "", "");
  BOOST_TEST(c.read_response()->status == 204);
}

BOOST_AUTO_TEST_CASE(connection_close_and_http_1_0_close_after_the_response) {
  auto server = test::start_server(test::echo);
  {
    http_client c(server->port());
    BOOST_REQUIRE(c.send(get("/x", "Connection: close\r\n")));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->header("connection") == "close");
    BOOST_TEST(c.closed_by_server());
  }
  {
    http_client c(server->port());
    BOOST_REQUIRE(c.send("GET /old HTTP/1.0\r\n\r\n"));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "GET /old?\n");
    BOOST_TEST(c.closed_by_server());
  }
  BOOST_TEST(eventually([&] { return server->open_connections() == 0; }));
}

BOOST_AUTO_TEST_CASE(streams_to_http_1_0_without_chunks_until_close) {
  test::pending_requests pending;
  auto server = test::start_server(pending.handler());
  http_client c(server->port());
  BOOST_REQUIRE(c.send("GET /s HTTP/1.0\r\n\r\n"));
  auto p = pending.next();
  p.responder->start_stream(200, "text/plain");
  p.responder->write("one ");
  p.responder->write("two");
  p.responder->end();
  auto r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->header("transfer-encoding").empty());
  BOOST_TEST(r->body == "one two");
}

BOOST_AUTO_TEST_CASE(reads_chunked_request_bodies_and_sends_100_continue) {
  auto server = test::start_server(test::echo);
  http_client c(server->port());
  BOOST_REQUIRE(
      c.send("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
             "4\r\nabcd\r\n"));
  BOOST_REQUIRE(c.send("a\r\n0123456789\r\n0\r\n\r\n"));
  auto r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->body == "POST /c?\nabcd0123456789");

  BOOST_REQUIRE(c.send("POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"));
  BOOST_REQUIRE(c.read_until("HTTP/1.1 100 Continue\r\n\r\n"));
  BOOST_REQUIRE(c.send("xyz"));
  r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->body == "POST /e?\nxyz");
}

BOOST_AUTO_TEST_CASE(head_responses_have_headers_only) {
  auto server = test::start_server(test::echo);
  http_client c(server->port());
  BOOST_REQUIRE(c.send("HEAD /h HTTP/1.1\r\n\r\n"));
  auto r = c.read_response(true);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->header("content-length") == "9");
  BOOST_REQUIRE(c.send(get("/next")));
  r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->body == "GET /next?\n");  // no stray body bytes came before it
}

BOOST_AUTO_TEST_CASE(a_client_leaving_mid_stream_fires_on_close) {
  test::pending_requests pending;
  auto server = test::start_server(pending.handler());
  auto c = std::make_unique<http_client>(server->port());
  BOOST_REQUIRE(c->send(get("/s")));
  auto p = pending.next();
  std::promise<std::thread::id> fired;
  p.responder->on_close([&] { fired.set_value(std::this_thread::get_id()); });
  p.responder->start_stream(200, "text/event-stream");
  p.responder->write("data: 1\n\n");
  BOOST_REQUIRE(c->read_until("data: 1"));
  c.reset();
  auto f = fired.get_future();
  BOOST_REQUIRE(f.wait_for(2s) == std::future_status::ready);
  BOOST_TEST(f.get() != std::this_thread::get_id());  // the loop thread
  BOOST_TEST(p.responder->closed());
  p.responder->write("data: 2\n\n");  // ignored
  p.responder->end();
  BOOST_TEST(eventually([&] { return server->open_connections() == 0; }));

  // A callback registered after the client left still fires, once.
  http_client c2(server->port());
  BOOST_REQUIRE(c2.send(get("/late")));
  auto late = pending.next();
  c2.close();
  BOOST_REQUIRE(eventually([&] { return late.responder->closed(); }));
  std::promise<void> late_fired;
  late.responder->on_close([&] { late_fired.set_value(); });
  BOOST_TEST((late_fired.get_future().wait_for(2s) == std::future_status::ready));
}

BOOST_AUTO_TEST_CASE(on_close_does_not_fire_after_a_normal_end) {
  test::pending_requests pending;
  auto server = test::start_server(pending.handler());
  http_client c(server->port());
  BOOST_REQUIRE(c.send(get("/s")));
  auto p = pending.next();
  std::atomic<int> fired{0};
  p.responder->on_close([&] { ++fired; });
  p.responder->respond(200, "text/plain", "done");
  BOOST_REQUIRE(c.read_response());
  c.close();
  BOOST_REQUIRE(eventually([&] { return server->open_connections() == 0; }));
  BOOST_TEST(fired == 0);
  BOOST_TEST(!p.responder->closed());
}

BOOST_AUTO_TEST_CASE(graceful_shutdown_waits_for_the_stream_in_flight) {
  test::pending_requests pending;
  auto server = test::start_server(pending.handler());
  http_client streaming(server->port()), idle(server->port());
  BOOST_REQUIRE(streaming.send(get("/s")));
  auto p = pending.next();
  p.responder->start_stream(200, "text/plain");
  p.responder->write("before ");
  BOOST_REQUIRE(streaming.read_until("before "));

  server->stop_accepting();
  BOOST_TEST(!http_client(server->port()).connected());
  auto done = std::async(std::launch::async, [&] { server->shutdown(5s); });
  BOOST_TEST(idle.closed_by_server());  // no request in flight: closed at once
  BOOST_TEST((done.wait_for(200ms) == std::future_status::timeout));
  p.responder->write("after");
  p.responder->end();
  BOOST_REQUIRE((done.wait_for(5s) == std::future_status::ready));
  auto r = streaming.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->body == "before after");
  BOOST_TEST(r->header("connection").empty());  // began before the shutdown did
  BOOST_TEST(streaming.closed_by_server());
  BOOST_TEST(server->open_connections() == 0u);
}

BOOST_AUTO_TEST_CASE(shutdown_closes_what_outlives_the_grace_period) {
  test::pending_requests pending;
  auto server = test::start_server(pending.handler());
  http_client c(server->port());
  BOOST_REQUIRE(c.send(get("/forever")));
  auto p = pending.next();
  std::promise<void> fired;
  p.responder->on_close([&] { fired.set_value(); });
  p.responder->start_stream(200, "text/plain");
  auto begin = std::chrono::steady_clock::now();
  server->shutdown(300ms);
  auto took = std::chrono::steady_clock::now() - begin;
  BOOST_TEST((took >= 300ms && took < 3s));
  BOOST_TEST((fired.get_future().wait_for(0s) == std::future_status::ready));
  BOOST_TEST(c.closed_by_server());
  p.responder->write("too late");  // ignored, also after the server is gone
  server.reset();
  p.responder->end();
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_an_error_value) {
  auto first = test::start_server(test::echo);
  http::server_options o;
  o.port = first->port();
  auto second = http::server::start(o, test::echo);
  BOOST_REQUIRE(!second.ok());
  BOOST_TEST(second.err().message ==
             "cannot listen on 127.0.0.1:" + std::to_string(first->port()) + ": Address already in use");
  o.port = 70000;
  BOOST_TEST(!http::server::start(o, test::echo).ok());
}

BOOST_AUTO_TEST_CASE(binds_names_and_wildcard_addresses) {
  for (const char* host : {"localhost", "0.0.0.0", "::"}) {
    http::server_options o;
    o.host = host;
    auto started = http::server::start(o, test::echo);
    if (!started.ok() && std::string_view(host) == "::") continue;  // a machine without IPv6
    BOOST_REQUIRE_MESSAGE(started.ok(), host);
    auto& server = started.value();
    http_client c(server->port());  // 127.0.0.1: localhost, and each wildcard, take it
    if (!c.connected()) continue;   // localhost resolved to ::1 first
    BOOST_REQUIRE(c.send(get("/")));
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200, host);
  }
}
