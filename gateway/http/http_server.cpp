#include "gateway/http/http_server.hpp"

#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <future>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/check.hpp"
#include "gateway/http/http_connection.hpp"
#include "gateway/http/listen_socket.hpp"
#include "gateway/http/loop_inbox.hpp"

namespace troupe::http {

struct server::state {
  uv_loop_t loop;
  uv_tcp_t listener;
  bool listening = false;
  connection_host host;
  std::unordered_map<http_connection*, std::shared_ptr<http_connection>> connections;
  size_t max_connections = 0;  // the option, within the descriptor limit
  std::atomic<size_t> open{0};
  int port = 0;
  bool shut_down = false;
  std::thread thread;
};

namespace {

// The handles of a server that failed to start are closed, and the loop with them.
void discard_loop(uv_loop_t* loop) {
  uv_walk(
      loop,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
  uv_run(loop, UV_RUN_DEFAULT);
  TROUPE_CHECK(uv_loop_close(loop) == 0, "uv_loop_close");
}

// Raises this process's descriptor limit to its hard limit; what it leaves for client
// connections, beside a reserve for everything else (files, the cluster's links).
size_t descriptors_for_connections() {
  constexpr rlim_t reserve = 256;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur > reserve * 2 ? size_t(limit.rlim_cur - reserve) : size_t(limit.rlim_cur / 2);
}

}  // namespace

result<std::unique_ptr<server>> server::start(server_options options, handler h) {
  TROUPE_CHECK(bool(h), "a server needs a handler");
  auto s = std::make_unique<state>();
  TROUPE_CHECK(uv_loop_init(&s->loop) == 0, "uv_loop_init");
  TROUPE_CHECK(uv_tcp_init(&s->loop, &s->listener) == 0, "uv_tcp_init");
  s->listener.data = s.get();
  auto on_connection = [](uv_stream_t* listener, int status) {
    if (status < 0) return;  // out of descriptors, or the like: the client will retry
    auto& st = *static_cast<state*>(listener->data);
    bool room = st.open < st.max_connections;
    if (!room) {  // counted are also those closing: count the live ones, and find one to evict
      size_t live = 0;
      http_connection* idle = nullptr;
      for (auto& [raw, other] : st.connections)
        if (!other->is_closed()) {
          ++live;
          if (!idle && !other->busy()) idle = raw;
        }
      room = live < st.max_connections;
      if (!room && idle) {
        idle->close(/*reset=*/true);
        room = true;
      }
    }
    auto c = std::make_shared<http_connection>(st.host);
    st.connections.emplace(c.get(), c);
    ++st.open;
    if (!c->accept(listener) || !room) c->close(/*reset=*/true);
  };
  if (status listening = listen_tcp(&s->listener, options.host, options.port, on_connection); !listening) {
    discard_loop(&s->loop);
    return listening.err();
  }
  s->listening = true;
  sockaddr_storage bound{};
  int length = sizeof bound;
  uv_tcp_getsockname(&s->listener, reinterpret_cast<sockaddr*>(&bound), &length);
  s->port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                              : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  s->max_connections = std::max<size_t>(1, std::min(options.max_connections, descriptors_for_connections()));
  s->host.loop = &s->loop;
  s->host.options = std::move(options);
  s->host.handle = std::move(h);
  s->host.inbox = std::make_shared<loop_inbox>(&s->loop);
  s->host.closed = [st = s.get()](http_connection& c) {
    st->connections.erase(&c);
    --st->open;
  };
  s->thread = std::thread([st = s.get()] {
    // Writes happen only here: a client gone mid-write costs an EPIPE, not the process.
    sigset_t sigpipe;
    sigemptyset(&sigpipe);
    sigaddset(&sigpipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe, nullptr);
    uv_run(&st->loop, UV_RUN_DEFAULT);
  });
  return std::unique_ptr<server>(new server(std::move(s)));
}

server::server(std::unique_ptr<state> s) : state_(std::move(s)) {}

server::~server() {
  if (!state_->shut_down) shutdown(std::chrono::milliseconds(0));
  // With the listener and every connection closed, closing the inbox leaves the loop
  // with no handles, so it returns.
  state_->host.inbox->post([st = state_.get()] { st->host.inbox->close(); });
  state_->thread.join();
  TROUPE_CHECK(uv_loop_close(&state_->loop) == 0, "uv_loop_close");
}

int server::port() const { return state_->port; }

size_t server::open_connections() const { return state_->open; }

void server::stop_accepting() {
  run_on_loop([st = state_.get()] {
    if (!std::exchange(st->listening, false)) return;
    uv_close(reinterpret_cast<uv_handle_t*>(&st->listener), nullptr);
  });
}

void server::shutdown(std::chrono::milliseconds grace) {
  state_->shut_down = true;
  stop_accepting();
  run_on_loop([st = state_.get()] {
    st->host.draining = true;
    for (auto& [p, c] : st->connections) c->drain();
  });
  // Responses end on other threads' schedule, so poll: shutdown is rare and not hot.
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (any_busy() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  run_on_loop([st = state_.get()] {
    for (auto& [p, c] : st->connections) c->close();
  });
  // Handles finish closing in the loop's next turn.
  while (state_->open > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void server::run_on_loop(const std::function<void()>& work) {
  TROUPE_CHECK(std::this_thread::get_id() != state_->thread.get_id(),
               "a server method that waits for the loop thread was called on it (from a handler?)");
  std::promise<void> done;
  state_->host.inbox->post([&] {
    work();
    done.set_value();
  });
  done.get_future().wait();
}

bool server::any_busy() {
  bool busy = false;
  run_on_loop([&] {
    for (auto& [p, c] : state_->connections) busy = busy || c->busy();
  });
  return busy;
}

}  // namespace troupe::http
