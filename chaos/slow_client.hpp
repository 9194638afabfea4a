#pragma once
// A client on a slow link, for the slow-client drill: it asks for one streamed completion
// and reads the answer one byte a second through a 4 KB receive buffer, until the server
// drops it or it is told to stop. The server's end is seen at once from the socket's TCP
// state (a reset), not after the bytes still buffered for it have been read.
#include <atomic>
#include <chrono>
#include <string>

#include "bench/http_client.hpp"
#include "bench/serve_client.hpp"

namespace troupe::chaos {

struct slow_client_result {
  bool dropped = false;  // the server ended the connection before the stream's end was read
  double seconds = 0;    // from sending the request to being dropped (or stopped)
  size_t bytes_read = 0;
  std::string error;  // could not connect or send
};

// Runs until the server drops it or `stop` is set (checked every second).
slow_client_result run_slow_client(const bench::server_address& server, const bench::request_spec& spec,
                                   const bench::bench_prompt& prompt, const std::atomic<bool>& stop);

}  // namespace troupe::chaos
