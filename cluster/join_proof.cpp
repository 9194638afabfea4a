#include "cluster/join_proof.hpp"

#include <algorithm>
#include <cstddef>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/check.hpp"

namespace troupe {

std::vector<uint8_t> make_join_nonce() {
  std::vector<uint8_t> nonce(join_nonce_bytes);
  TROUPE_CHECK(RAND_bytes(nonce.data(), int(nonce.size())) == 1, "the system's random source failed");
  return nonce;
}

std::vector<uint8_t> join_proof(std::string_view secret, std::string_view cluster_name,
                                const std::vector<uint8_t>& nonce) {
  // The name and the nonce, the name's length first so that no two pairs give one message.
  std::vector<uint8_t> message(4 + cluster_name.size() + nonce.size());
  const uint32_t name_bytes = uint32_t(cluster_name.size());
  for (size_t i = 0; i < 4; ++i) message[i] = uint8_t(name_bytes >> (8 * i));
  std::copy(cluster_name.begin(), cluster_name.end(), message.begin() + 4);
  std::copy(nonce.begin(), nonce.end(), message.begin() + 4 + std::ptrdiff_t(cluster_name.size()));
  std::vector<uint8_t> mac(EVP_MAX_MD_SIZE);
  size_t length = 0;
  TROUPE_CHECK(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(), message.data(),
                         message.size(), mac.data(), mac.size(), &length) != nullptr,
               "OpenSSL's HMAC-SHA256 failed");
  mac.resize(length);
  return mac;
}

bool join_proof_matches(std::string_view secret, std::string_view cluster_name, const std::vector<uint8_t>& nonce,
                        const std::vector<uint8_t>& proof) {
  const auto expected = join_proof(secret, cluster_name, nonce);
  return proof.size() == expected.size() && CRYPTO_memcmp(proof.data(), expected.data(), proof.size()) == 0;
}

}  // namespace troupe
