// CAF 0.17's OpenSSL module reads each TLS call's outcome with SSL_get_error without first
// emptying the thread's OpenSSL error queue, which SSL_get_error consults: one failed
// handshake (a stranger's connection that closes, or sends garbage) leaves an error there,
// and the next read on a healthy link of the same I/O thread is taken for a failure and
// closes it (the node loses the head). These definitions, exported from the executable,
// come before libssl's for every caller: each empties the queue, then calls libssl's.
#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace {

template <class F>
F next_definition(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buffer, int size) {
  static const auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buffer, size);
}

int SSL_write(SSL* ssl, const void* buffer, int size) {
  static const auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buffer, size);
}

int SSL_accept(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

int SSL_connect(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

}  // extern "C"
