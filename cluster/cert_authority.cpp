#include "cluster/cert_authority.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cluster/openssl_handles.hpp"

namespace troupe {
namespace {

using tls::file_ptr;
using tls::pkey_ptr;
using tls::read_pem;
using tls::x509_ptr;

constexpr long seconds_a_day = 24L * 60 * 60;

// A new file at `path`, created with `mode` (never an existing one overwritten).
result<file_ptr> create(const std::filesystem::path& path, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return error{path.string() + ": " + std::strerror(errno)};
  file_ptr f(fdopen(fd, "w"), &std::fclose);
  if (!f) {
    const int why = errno;
    close(fd);
    return error{path.string() + ": " + std::strerror(why)};
  }
  return f;
}

status add_extension(X509* cert, X509V3_CTX* context, int nid, const std::string& value) {
  X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, context, nid, value.c_str());
  if (!e) return error{"certificate extension " + value + ": " + tls::last_error()};
  const int added = X509_add_ext(cert, e, -1);
  X509_EXTENSION_free(e);
  if (added != 1) return error{"certificate extension " + value + ": " + tls::last_error()};
  return ok();
}

// A certificate for `key`, named `common_name`, signed by `issuer` with `issuer_key` (the
// certificate itself and `key` for the CA), carrying `extensions` (nid, value).
result<x509_ptr> make_certificate(EVP_PKEY* key, const std::string& common_name, X509* issuer, EVP_PKEY* issuer_key,
                                  long valid_days, const std::vector<std::pair<int, std::string>>& extensions) {
  x509_ptr cert(X509_new());
  unsigned char serial[16];
  if (!cert || RAND_bytes(serial, sizeof serial) != 1) return error{"a certificate: " + tls::last_error()};
  serial[0] &= 0x7f;  // a positive serial number
  std::unique_ptr<BIGNUM, tls::freer<BIGNUM, BN_free>> number(BN_bin2bn(serial, sizeof serial, nullptr));
  X509_set_version(cert.get(), 2);
  BN_to_ASN1_INTEGER(number.get(), X509_get_serialNumber(cert.get()));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60 * 60);  // clocks of the nodes differ a little
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), valid_days * seconds_a_day);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509V3_CTX context;
  X509V3_set_ctx(&context, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions)
    if (auto s = add_extension(cert.get(), &context, nid, value); !s) return s.err();
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return error{"signing a certificate: " + tls::last_error()};
  return cert;
}

status write_key(const std::filesystem::path& path, EVP_PKEY* key) {
  auto f = create(path, 0600);
  if (!f) return f.err();
  if (PEM_write_PrivateKey(f->get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return error{path.string() + ": " + tls::last_error()};
  return ok();
}

status write_certificate(const std::filesystem::path& path, X509* cert) {
  auto f = create(path, 0644);
  if (!f) return f.err();
  if (PEM_write_X509(f->get(), cert) != 1) return error{path.string() + ": " + tls::last_error()};
  return ok();
}

// What a node's certificate names besides its own name: its address, as an IP or a DNS name.
std::string alternative_names(const node_spec& node) {
  std::string names = "DNS:" + node.name;
  if (node.address.empty()) return names;
  unsigned char ip[16];
  const bool literal =
      inet_pton(AF_INET, node.address.c_str(), ip) == 1 || inet_pton(AF_INET6, node.address.c_str(), ip) == 1;
  return names + (literal ? ",IP:" : ",DNS:") + node.address;
}

}  // namespace

result<std::vector<std::filesystem::path>> make_cluster_certs(const cluster_spec& spec) {
  const std::filesystem::path& dir = spec.cluster.certs;
  if (dir.empty())
    return error{spec.file.string() + ": [cluster] names no `certs` folder to write them in (add `certs = certs`)"};
  std::error_code ec;
  if (std::filesystem::create_directories(dir, ec); ec) return error{dir.string() + ": " + ec.message()};
  if (chmod(dir.c_str(), 0700) != 0) return error{dir.string() + ": " + std::strerror(errno)};
  std::vector<std::filesystem::path> made;
  const auto ca_crt = dir / "ca.crt", ca_key = dir / "ca.key";
  const bool have_ca = std::filesystem::exists(ca_crt), have_ca_key = std::filesystem::exists(ca_key);
  if (have_ca != have_ca_key)
    return error{dir.string() + ": has " + (have_ca ? "ca.crt but no ca.key" : "ca.key but no ca.crt") +
                 " (remove it to make a new CA)"};
  pkey_ptr authority_key;
  x509_ptr authority;
  if (!have_ca) {
    authority_key.reset(EVP_EC_gen("P-256"));
    if (!authority_key) return error{"a CA key: " + tls::last_error()};
    auto cert = make_certificate(authority_key.get(), "troupe cluster " + spec.cluster.name + " CA", nullptr,
                                 authority_key.get(), 3650,
                                 {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                  {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                  {NID_subject_key_identifier, "hash"}});
    if (!cert) return cert.err();
    authority = std::move(*cert);
    if (auto s = write_key(ca_key, authority_key.get()); !s) return s.err();
    if (auto s = write_certificate(ca_crt, authority.get()); !s) return s.err();
    made.insert(made.end(), {ca_crt, ca_key});
  } else {
    auto key = read_pem<pkey_ptr>(ca_key, "CA key", PEM_read_PrivateKey);
    if (!key) return key.err();
    auto cert = read_pem<x509_ptr>(ca_crt, "CA certificate", PEM_read_X509);
    if (!cert) return cert.err();
    if (X509_check_private_key(cert->get(), key->get()) != 1)
      return error{ca_key.string() + ": not the key of " + ca_crt.string() + " (" + tls::last_error() + ")"};
    authority_key = std::move(*key);
    authority = std::move(*cert);
  }
  for (const node_spec& node : spec.nodes) {
    const auto crt = dir / (node.name + ".crt"), key_file = dir / (node.name + ".key");
    const bool have_crt = std::filesystem::exists(crt), have_key = std::filesystem::exists(key_file);
    if (have_crt && have_key) continue;
    if (have_crt || have_key)
      return error{dir.string() + ": node " + node.name + " has " + (have_crt ? crt : key_file).filename().string() +
                   " but no " + (have_crt ? key_file : crt).filename().string() + " (remove it to make both again)"};
    pkey_ptr key(EVP_EC_gen("P-256"));
    if (!key) return error{"node " + node.name + "'s key: " + tls::last_error()};
    auto cert = make_certificate(key.get(), node.name, authority.get(), authority_key.get(), 730,
                                 {{NID_basic_constraints, "critical,CA:FALSE"},
                                  {NID_key_usage, "critical,digitalSignature"},
                                  {NID_ext_key_usage, "serverAuth,clientAuth"},
                                  {NID_subject_alt_name, alternative_names(node)},
                                  {NID_subject_key_identifier, "hash"},
                                  {NID_authority_key_identifier, "keyid"}});
    if (!cert) return error{"node " + node.name + ": " + cert.err().message};
    if (auto s = write_key(key_file, key.get()); !s) return s.err();
    if (auto s = write_certificate(crt, cert->get()); !s) return s.err();
    made.insert(made.end(), {crt, key_file});
  }
  return made;
}

}  // namespace troupe
