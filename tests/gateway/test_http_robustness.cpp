// The HTTP server against hostile and broken clients: it answers what it can, cuts off
// what it must, never crashes or hangs, and keeps serving everyone else.
#define BOOST_TEST_MODULE http_robustness
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <netinet/tcp.h>

#include <atomic>
#include <random>
#include <thread>

#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/pending_requests.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using test::http_client;
using troupe::test::eventually;

namespace {

const std::string simple_get = "GET /ok HTTP/1.1\r\nHost: t\r\n\r\n";

// A normal request still gets its normal answer.
void still_answers(const http::server& server) {
  http_client c(server.port());
  BOOST_REQUIRE(c.send(simple_get));
  auto r = c.read_response();
  BOOST_REQUIRE_MESSAGE(r, "the server stopped answering");
  BOOST_TEST(r->status == 200);
  BOOST_TEST(r->body == "GET /ok?\n");
}

// Sends `bytes` and expects an error answer with `status`, then the close.
void expect_error(const http::server& server, const std::string& bytes, int status) {
  http_client c(server.port());
  c.send(bytes);  // the server may answer and close before it has read everything
  auto r = c.read_response();
  BOOST_REQUIRE_MESSAGE(r, "no answer, expected " << status);
  BOOST_TEST(r->status == status);
  BOOST_TEST(r->header("content-type") == "application/json");
  BOOST_TEST(r->body.starts_with(R"({"error":{"message":")"));
  BOOST_TEST(r->body.ends_with(R"(","type":"invalid_request_error","param":null,"code":null}})"));
  BOOST_TEST(r->header("connection") == "close");
  BOOST_TEST(c.closed_by_server());
}

}  // namespace

BOOST_AUTO_TEST_CASE(garbage_gets_400) {
  auto server = test::start_server(test::echo);
  expect_error(*server, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 tls hello", 400);
  expect_error(*server, "GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400);
  expect_error(*server, "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400);
  expect_error(*server, "GET / HTTP/9.9\r\n\r\n", 505);
  still_answers(*server);
}

BOOST_AUTO_TEST_CASE(huge_headers_get_431) {
  auto server = test::start_server(test::echo);
  expect_error(*server, "GET / HTTP/1.1\r\nX-Big: " + std::string(100 << 10, 'a') + "\r\n\r\n", 431);
  expect_error(*server, "GET /" + std::string(1 << 20, 'a') + " HTTP/1.1\r\n\r\n", 431);
  http::server_options small;
  small.max_header_bytes = 1024;
  auto strict = test::start_server(test::echo, small);
  expect_error(*strict, "GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n", 431);
  still_answers(*strict);
}

BOOST_AUTO_TEST_CASE(oversize_bodies_get_413_before_they_are_read) {
  http::server_options o;
  o.max_body_bytes = 1000;
  auto server = test::start_server(test::echo, o);
  expect_error(*server, "POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413);
  expect_error(*server, "POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n" + std::string(300000, 'x'), 413);
  expect_error(
      *server,
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n" + std::string(1001, 'x') + "\r\n0\r\n\r\n", 413);
  http_client c(server->port());  // with Expect: 100-continue, 413 instead of 100
  BOOST_REQUIRE(c.send("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"));
  auto r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->status == 413);
  still_answers(*server);
}

BOOST_AUTO_TEST_CASE(a_request_in_many_tiny_writes) {
  auto server = test::start_server(test::echo);
  http_client c(server->port());
  int on = 1;
  setsockopt(c.fd(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  std::string bytes = "POST /tiny?q=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc";
  for (char ch : bytes) {
    BOOST_REQUIRE(c.send(std::string(1, ch)));
    std::this_thread::sleep_for(1ms);
  }
  auto r = c.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->body == "POST /tiny?q=1\nabc");
}

BOOST_AUTO_TEST_CASE(slow_and_silent_clients_are_cut_off_by_the_timeouts) {
  http::server_options o;
  o.header_timeout = 300ms;
  o.idle_timeout = 400ms;
  auto server = test::start_server(test::echo, o);
  auto begin = std::chrono::steady_clock::now();
  http_client slowloris(server->port()), silent(server->port()), idle(server->port());
  BOOST_REQUIRE(idle.send(simple_get));
  BOOST_REQUIRE(idle.read_response());
  std::string bytes = "GET / HTTP/1.1\r\nX-A: b\r\n";
  for (size_t i = 0; i < bytes.size() && slowloris.send(bytes.substr(i, 1)); ++i)
    std::this_thread::sleep_for(50ms);  // 1.2 s in all, each byte well within any read timeout
  auto r = slowloris.read_response();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->status == 408);
  BOOST_TEST(slowloris.closed_by_server());
  BOOST_TEST(silent.closed_by_server());
  BOOST_TEST(idle.closed_by_server());
  BOOST_TEST((std::chrono::steady_clock::now() - begin < 3s));
  BOOST_TEST(eventually([&] { return server->open_connections() == 0; }));
  still_answers(*server);
}

BOOST_AUTO_TEST_CASE(two_hundred_concurrent_connections) {
  test::pending_requests pending;
  auto server = test::start_server(pending.handler());
  std::vector<std::unique_ptr<http_client>> clients;
  for (int i = 0; i < 200; ++i) {
    clients.push_back(std::make_unique<http_client>(server->port()));
    BOOST_REQUIRE(clients.back()->send("GET /" + std::to_string(i) + " HTTP/1.1\r\n\r\n"));
  }
  // Answer them from another thread, in the order they arrive, while all are open.
  std::thread answering([&] {
    for (int i = 0; i < 200; ++i)
      if (auto p = pending.wait_next()) p->responder->respond(200, "text/plain", p->request.path);
  });
  for (int i = 0; i < 200; ++i) {
    auto r = clients[i]->read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == std::string("/").append(std::to_string(i)));
  }
  answering.join();
  BOOST_TEST(server->open_connections() == 200u);
}

BOOST_AUTO_TEST_CASE(a_client_that_never_reads_is_dropped_without_stalling_others) {
  test::pending_requests pending;
  http::server_options o;
  o.max_write_queue_bytes = 1 << 20;
  auto server = test::start_server(pending.handler(), o);
  http_client sluggish(server->port());
  BOOST_REQUIRE(sluggish.send("GET /flood HTTP/1.1\r\n\r\n"));
  auto flood = pending.next();
  std::atomic<bool> dropped{false};
  flood.responder->on_close([&] { dropped = true; });
  flood.responder->start_stream(200, "application/octet-stream");
  std::atomic<size_t> written{0};
  std::thread writer([&] {  // a generation that outruns its client
    while (!flood.responder->closed() && written < (256u << 20)) {
      flood.responder->write(std::string(64 << 10, 'x'));
      written += 64 << 10;
      std::this_thread::sleep_for(100us);
    }
  });
  for (int i = 0; i < 20; ++i) {  // others are served meanwhile
    http_client c(server->port());
    BOOST_REQUIRE(c.send("GET /other HTTP/1.1\r\n\r\n"));
    auto p = pending.next();
    BOOST_TEST(p.request.path == "/other");
    p.responder->respond(200, "text/plain", "fine");
    auto r = c.read_response();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->body == "fine");
  }
  writer.join();
  BOOST_TEST(dropped.load());
  BOOST_TEST(written < (256u << 20));  // cut off long before the writer gave up
}

// A token stream is small: a client that stops reading it fills the kernel's buffers long
// before the write queue's limit. Once nothing it is sent goes out for the send timeout it
// is dropped, with a reset (its responder sees the close, which cancels a generation); a
// client that reads slowly but does read keeps its stream.
BOOST_AUTO_TEST_CASE(a_client_that_stops_reading_a_stream_is_dropped_after_the_send_timeout) {
  test::pending_requests pending;
  http::server_options o;
  o.send_timeout = 1s;
  // Before the server: closing its connections at the end calls the on_close callbacks.
  std::atomic<bool> stalled_dropped{false}, slow_dropped{false};
  auto server = test::start_server(pending.handler(), o);
  auto stream_to = [&](http_client& c, std::atomic<bool>& dropped, std::atomic<size_t>& written,
                       std::chrono::steady_clock::time_point until) {
    BOOST_REQUIRE(c.send("GET /stream HTTP/1.1\r\n\r\n"));
    auto p = pending.next();
    p.responder->on_close([&] { dropped = true; });
    p.responder->start_stream(200, "text/event-stream");
    return std::thread([&, p, until] {  // 100 kB/s in events of 200 bytes: tokens of a fast model
      while (!p.responder->closed() && std::chrono::steady_clock::now() < until) {
        p.responder->write("data: " + std::string(192, 'x') + "\n\n");
        written += 200;
        std::this_thread::sleep_for(2ms);
      }
    });
  };
  http_client stalled(server->port()), slow(server->port());
  std::atomic<size_t> stalled_written{0}, slow_written{0};
  const auto begin = std::chrono::steady_clock::now();
  auto stalled_writer = stream_to(stalled, stalled_dropped, stalled_written, begin + 20s);
  auto slow_writer = stream_to(slow, slow_dropped, slow_written, begin + 4s);
  size_t slow_read = 0;
  while (std::chrono::steady_clock::now() < begin + 4s) {  // a sip every 200 ms: less than is sent
    char buf[16 << 10];
    const ssize_t n = ::recv(slow.fd(), buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) slow_read += size_t(n);
    std::this_thread::sleep_for(200ms);
  }
  stalled_writer.join();
  slow_writer.join();
  BOOST_TEST(stalled_dropped.load());
  BOOST_TEST((std::chrono::steady_clock::now() - begin < 10s), "the stalled client was kept until its writer gave up");
  BOOST_TEST(stalled_written < (1u << 20), "dropped by the write queue's limit, not the send timeout");
  // With a reset: a graceful end would wait behind everything the client did not read.
  tcp_info info{};
  socklen_t length = sizeof info;
  BOOST_TEST(getsockopt(stalled.fd(), IPPROTO_TCP, TCP_INFO, &info, &length) == 0);
  BOOST_TEST(int(info.tcpi_state) == int(TCP_CLOSE));
  BOOST_TEST(!slow_dropped.load());
  BOOST_TEST(slow_read > (32u << 10));
}

BOOST_AUTO_TEST_CASE(a_client_that_pipelines_without_reading_is_paused) {
  auto server = test::start_server(test::echo);
  http_client greedy(server->port());
  fcntl(greedy.fd(), F_SETFL, O_NONBLOCK);
  std::string burst;
  while (burst.size() < (1 << 20)) burst += simple_get;
  size_t sent = 0;
  auto deadline = std::chrono::steady_clock::now() + 1s;
  while (std::chrono::steady_clock::now() < deadline && sent < (256u << 20)) {
    ssize_t n = ::send(greedy.fd(), burst.data(), burst.size(), MSG_NOSIGNAL);
    if (n > 0) {
      sent += size_t(n);
    } else {
      std::this_thread::sleep_for(1ms);
    }
  }
  // The server stopped reading once its answers backed up: socket buffers hold the rest.
  BOOST_TEST(sent < (64u << 20));
  still_answers(*server);
}

BOOST_AUTO_TEST_CASE(random_inputs_never_crash_or_hang_the_server) {
  http::server_options o;
  o.header_timeout = 500ms;
  o.max_body_bytes = 4096;
  auto server = test::start_server(test::echo, o);
  std::mt19937 gen(7);
  const std::vector<std::string> seeds = {simple_get, "POST /p HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
                                          "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
                                          "GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n"};
  auto deadline = std::chrono::steady_clock::now() + 3s;
  int runs = 0;
  for (; std::chrono::steady_clock::now() < deadline; ++runs) {
    std::string bytes = seeds[gen() % seeds.size()] + seeds[gen() % seeds.size()];
    for (int edits = int(gen() % 6); edits > 0; --edits) {
      size_t at = gen() % bytes.size();
      if (gen() % 2) {
        bytes[at] = char(gen());
      } else {
        bytes.insert(at, std::string(gen() % 64, char(gen())));
      }
    }
    if (gen() % 5 == 0) {
      bytes.resize(gen() % 300);
      for (char& ch : bytes) ch = char(gen());
    }
    http_client c(server->port(), 20ms);
    for (size_t at = 0; at < bytes.size();) {  // in random pieces
      size_t n = 1 + gen() % 40;
      if (!c.send(std::string_view(bytes).substr(at, n))) break;
      at += n;
    }
    if (gen() % 2) c.read_response();  // or leave at once, answer unread
  }
  BOOST_TEST(runs > 50);
  still_answers(*server);
  BOOST_TEST(eventually([&] { return server->open_connections() == 0; }, 3s));
}

// A connection beyond max_connections takes the place of one with no request in flight (an
// idle keep-alive client, or one that trickles its headers), which is reset; when every
// connection has a request in flight, the newcomer is reset instead, and those being
// served finish.
BOOST_AUTO_TEST_CASE(beyond_max_connections_an_idle_client_makes_room_and_served_ones_stay) {
  test::pending_requests pending;
  http::server_options o;
  o.max_connections = 8;
  auto server = test::start_server(pending.handler(), o);
  std::vector<std::unique_ptr<http_client>> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(std::make_unique<http_client>(server->port()));
    BOOST_REQUIRE(idle.back()->send(i % 2 ? "GET /partial HTTP/1.1\r\nHost:" : ""));
  }
  BOOST_REQUIRE(eventually([&] { return server->open_connections() == 8; }));
  {
    http_client newcomer(server->port());
    BOOST_REQUIRE(newcomer.send("GET /new HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto p = pending.wait_next();
    BOOST_REQUIRE(p);
    BOOST_TEST(p->request.path == "/new");
    p->responder->respond(200, "text/plain", "served");
    auto r = newcomer.read_response();
    BOOST_REQUIRE_MESSAGE(r, "a newcomer was refused although idle connections could make room");
    BOOST_TEST(r->body == "served");
  }
  int reset = 0;
  for (auto& c : idle) reset += c->closed_by_server() ? 1 : 0;
  BOOST_TEST(reset >= 1);
  idle.clear();
  BOOST_REQUIRE(eventually([&] { return server->open_connections() == 0; }));

  std::vector<std::unique_ptr<http_client>> served;
  for (int i = 0; i < 8; ++i) {
    served.push_back(std::make_unique<http_client>(server->port()));
    BOOST_REQUIRE(served.back()->send("GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
  }
  std::vector<test::pending_request> held;
  for (int i = 0; i < 8; ++i) {
    auto p = pending.wait_next();
    BOOST_REQUIRE(p);
    held.push_back(std::move(*p));
  }
  http_client refused(server->port());
  refused.send("GET /late HTTP/1.1\r\nHost: t\r\n\r\n");
  BOOST_TEST(!refused.read_response(), "a newcomer got in while every connection was being served");
  for (auto& p : held) p.responder->respond(200, "text/plain", p.request.path);
  for (int i = 0; i < 8; ++i) {
    auto r = served[size_t(i)]->read_response();
    BOOST_REQUIRE_MESSAGE(r, "a client being served was dropped for a newcomer");
    BOOST_TEST(r->body == "/" + std::to_string(i));
  }
}
