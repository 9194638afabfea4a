#pragma once
// How a head proves to a node that it knows the cluster's secret, without sending it: the
// node hands out a fresh random nonce, the head answers HMAC-SHA256(secret, cluster name,
// nonce), and the node compares in constant time. A stranger who reaches a node's control
// port without the secret can start nothing there. The link itself is mutual TLS
// (cli/cluster_system.hpp) unless cluster.conf says `insecure = yes`; the secret is a
// second key, one a certificate's holder needs too.
#include <cstdint>
#include <string_view>
#include <vector>

namespace troupe {

inline constexpr size_t join_nonce_bytes = 32;

std::vector<uint8_t> make_join_nonce();
std::vector<uint8_t> join_proof(std::string_view secret, std::string_view cluster_name,
                                const std::vector<uint8_t>& nonce);
bool join_proof_matches(std::string_view secret, std::string_view cluster_name, const std::vector<uint8_t>& nonce,
                        const std::vector<uint8_t>& proof);

}  // namespace troupe
