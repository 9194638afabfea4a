#pragma once
// OpenSSL objects owned by unique_ptr, and the first PEM object of a file, for the
// cluster's TLS files.
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "base/result.hpp"

namespace troupe::tls {

template <class T, void (*Free)(T*)>
struct freer {
  void operator()(T* p) const { Free(p); }
};
using x509_ptr = std::unique_ptr<X509, freer<X509, X509_free>>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, freer<EVP_PKEY, EVP_PKEY_free>>;
using file_ptr = std::unique_ptr<FILE, int (*)(FILE*)>;

// OpenSSL's first queued error as text; the queue is emptied.
inline std::string last_error() {
  char text[256] = "unknown error";
  if (const unsigned long e = ERR_get_error()) ERR_error_string_n(e, text, sizeof text);
  ERR_clear_error();
  return text;
}

// The first PEM object of `path` that `read` takes (PEM_read_X509, PEM_read_PrivateKey),
// or why there is none; `what` names it in the error.
template <class T>
result<T> read_pem(const std::filesystem::path& path, const std::string& what,
                   typename T::pointer (*read)(FILE*, typename T::pointer*, pem_password_cb*, void*)) {
  file_ptr f(std::fopen(path.c_str(), "r"), &std::fclose);
  if (!f) return error{path.string() + ": cannot read the " + what + " (troupe cluster certs makes it)"};
  T out(read(f.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!out) return error{path.string() + ": not a PEM " + what};
  return out;
}

}  // namespace troupe::tls
