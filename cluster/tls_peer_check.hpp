#pragma once
// Why a TLS control link to a node failed, in words. CAF's OpenSSL module says only that
// the connection ended, so on a failed connect the head runs the same mutual handshake
// itself, with the same credentials, and reads OpenSSL's verdict.
#include <chrono>
#include <string>

#include "cluster/tls_files.hpp"

namespace troupe {

struct tls_verdict {
  bool handshake_done = false;  // the handshake worked: the failure was elsewhere
  bool lasting = false;         // a certificate or protocol mismatch, not fixed by waiting
  std::string why;              // empty when handshake_done
};

tls_verdict check_tls_peer(const std::string& host, int port, const tls_files& mine, std::chrono::milliseconds timeout);

}  // namespace troupe
