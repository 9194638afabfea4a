#pragma once
// The server's listening socket: resolve, bind, listen, with errors that say which
// address failed and why.
#include <uv.h>

#include <string>

#include "base/result.hpp"

namespace troupe::http {

// Binds `tcp` (initialised, unused) to host:port and listens. `host` is a numeric address
// ("127.0.0.1", "0.0.0.0", "::") or a name; each address it resolves to is tried in turn.
// Port 0 takes any free port.
status listen_tcp(uv_tcp_t* tcp, const std::string& host, int port, uv_connection_cb on_connection);

}  // namespace troupe::http
