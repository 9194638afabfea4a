#include "cluster/tls_files.hpp"

#include <openssl/x509_vfy.h>

#include "cluster/openssl_handles.hpp"

namespace troupe {
namespace {

using tls::pkey_ptr;
using tls::read_pem;
using tls::x509_ptr;
using store_ptr = std::unique_ptr<X509_STORE, tls::freer<X509_STORE, X509_STORE_free>>;
using store_ctx_ptr = std::unique_ptr<X509_STORE_CTX, tls::freer<X509_STORE_CTX, X509_STORE_CTX_free>>;

}  // namespace

tls_files tls_files_of(const cluster_spec& spec, const std::string& node) {
  const auto& dir = spec.cluster.certs;
  return {dir / "ca.crt", dir / (node + ".crt"), dir / (node + ".key")};
}

status check_tls_files(const tls_files& files) {
  auto ca = read_pem<x509_ptr>(files.ca, "CA certificate", PEM_read_X509);
  if (!ca) return ca.err();
  auto certificate = read_pem<x509_ptr>(files.certificate, "certificate", PEM_read_X509);
  if (!certificate) return certificate.err();
  auto key = read_pem<pkey_ptr>(files.key, "private key", PEM_read_PrivateKey);
  if (!key) return key.err();
  if (X509_check_private_key(certificate->get(), key->get()) != 1) {
    ERR_clear_error();
    return error{files.key.string() + ": not the key of " + files.certificate.string()};
  }
  store_ptr store(X509_STORE_new());
  store_ctx_ptr context(X509_STORE_CTX_new());
  if (!store || !context || X509_STORE_add_cert(store.get(), ca->get()) != 1 ||
      X509_STORE_CTX_init(context.get(), store.get(), certificate->get(), nullptr) != 1)
    return error{"checking " + files.certificate.string() + ": out of memory"};
  if (X509_verify_cert(context.get()) != 1) {
    const int why = X509_STORE_CTX_get_error(context.get());
    ERR_clear_error();
    return error{files.certificate.string() + ": " + X509_verify_cert_error_string(why) + " (checked against " +
                 files.ca.string() + ")"};
  }
  return ok();
}

}  // namespace troupe
