#pragma once
// The gateway's HTTP/1.1 server: a libuv event loop on its own thread, http-parser for
// requests. Keep-alive, pipelined requests answered in order, chunked bodies both ways,
// limits and timeouts that the server answers itself (400, 408, 413, 431, 505).
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/result.hpp"
#include "gateway/http/http_request.hpp"
#include "gateway/http/http_responder.hpp"

namespace troupe::http {

using handler = std::function<void(request, std::shared_ptr<responder>)>;  // called on the loop thread; must not block

struct server_options {
  std::string host = "127.0.0.1";  // a numeric address ("0.0.0.0", "::") or a host name
  int port = 0;                    // 0: any free port
  size_t max_body_bytes = 32 << 20;
  size_t max_header_bytes = 64 << 10;
  std::chrono::milliseconds header_timeout{10000};  // a request must arrive whole within this
  std::chrono::milliseconds idle_timeout{120000};   // keep-alive connection with no request in flight
  // A client that is not reading is disconnected (its responder sees on_close, which
  // cancels its request) rather than buffered without bound: once its unsent response
  // passes max_write_queue_bytes, or once the kernel's buffers for it are full and it has
  // taken none of what waits for it for send_timeout (a stalled or trickling reader).
  size_t max_write_queue_bytes = 8 << 20;
  std::chrono::milliseconds send_timeout{30000};
  // Open connections at most (and fewer when the process's descriptor limit, raised to its
  // hard limit at start, leaves less room). A new one beyond it takes the place of one with
  // no request in flight (an idle keep-alive client, or one still sending its headers),
  // which is reset; with none such, the new one is reset instead: clients being served
  // are never dropped for a newcomer.
  size_t max_connections = 4096;
};

class server {
 public:
  static result<std::unique_ptr<server>> start(server_options options,
                                               handler h);  // binds, listens, starts the loop thread
  ~server();                                                // stops everything
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  int port() const;  // the bound port
  size_t open_connections() const;

  // These wait for the loop thread, so a handler must not call them (nor the destructor).
  void stop_accepting();  // close the listener (graceful shutdown, step 1)
  // Waits until every in-flight response ended or `grace` passed, then closes all connections.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct state;
  explicit server(std::unique_ptr<state> s);
  void run_on_loop(const std::function<void()>& work);
  bool any_busy();

  std::unique_ptr<state> state_;
};

}  // namespace troupe::http
