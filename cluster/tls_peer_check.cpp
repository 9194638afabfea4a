#include "cluster/tls_peer_check.hpp"

#include <netdb.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cluster/openssl_handles.hpp"

namespace troupe {
namespace {

using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, tls::freer<SSL_CTX, SSL_CTX_free>>;
using ssl_ptr = std::unique_ptr<SSL, tls::freer<SSL, SSL_free>>;

// A connected TCP socket with send and receive timeouts, or -1.
int connect_with_timeout(const std::string& host, int port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

tls_verdict check_tls_peer(const std::string& host, int port, const tls_files& mine,
                           std::chrono::milliseconds timeout) {
  const std::string at = host + ":" + std::to_string(port);
  ssl_ctx_ptr context(SSL_CTX_new(TLS_client_method()));
  if (!context || SSL_CTX_use_certificate_chain_file(context.get(), mine.certificate.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(context.get(), mine.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_load_verify_locations(context.get(), mine.ca.c_str(), nullptr) != 1)
    return {false, true, "this process's TLS files: " + tls::last_error()};
  SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER, nullptr);
  const int fd = connect_with_timeout(host, port, timeout);
  if (fd < 0) return {false, false, "nothing accepts connections at " + at};
  ssl_ptr ssl(SSL_new(context.get()));
  SSL_set_fd(ssl.get(), fd);
  const int done = SSL_connect(ssl.get());
  const int kind = SSL_get_error(ssl.get(), done);
  const long verified = SSL_get_verify_result(ssl.get());
  const std::string reason = tls::last_error();
  tls_verdict verdict;
  if (done == 1) {
    // TLS 1.3 servers check the client's certificate after the handshake: a refusal of
    // ours arrives as an alert on the first read.
    char byte;
    const int peeked = SSL_peek(ssl.get(), &byte, 1);
    if (peeked <= 0 && SSL_get_error(ssl.get(), peeked) == SSL_ERROR_SSL)
      verdict = {false, true,
                 at + " refuses this process's certificate (" + tls::last_error() +
                     "): is it signed by the CA of that node's certs folder?"};
    else
      verdict = {true, false, ""};
  } else if (verified != X509_V_OK) {
    verdict = {false, true,
               at + " presents a certificate this cluster's CA (" + mine.ca.string() +
                   ") did not sign: " + X509_verify_cert_error_string(verified)};
  } else if (reason.find("wrong version number") != std::string::npos ||
             reason.find("packet length too long") != std::string::npos ||
             reason.find("record layer failure") != std::string::npos) {
    verdict = {false, true, at + " does not speak TLS (a node with `insecure = yes` in its cluster.conf?)"};
  } else if (reason.find("alert") != std::string::npos) {
    verdict = {false, true,
               at + " refuses this process's certificate (" + reason +
                   "): is it signed by the CA of that node's certs folder?"};
  } else if (kind == SSL_ERROR_SYSCALL || kind == SSL_ERROR_ZERO_RETURN) {
    verdict = {false, false, at + " ended the TLS handshake" + (reason == "unknown error" ? "" : " (" + reason + ")")};
  } else {
    verdict = {false, false, at + ": TLS handshake failed (" + reason + ")"};
  }
  close(fd);
  return verdict;
}

}  // namespace troupe
