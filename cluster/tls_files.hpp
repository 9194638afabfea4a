#pragma once
// A node's mutual TLS credentials for the control links, in cluster.conf's `certs` folder:
// the cluster's CA certificate (ca.crt) and the node's certificate and key (NODE.crt,
// NODE.key), as `troupe cluster certs` writes them.
#include <filesystem>
#include <string>

#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe {

struct tls_files {
  std::filesystem::path ca;
  std::filesystem::path certificate;
  std::filesystem::path key;
};

tls_files tls_files_of(const cluster_spec& spec, const std::string& node);

// Each file readable PEM, the key the certificate's, and the certificate signed by the CA
// and in its validity period: else the first problem, naming the file.
status check_tls_files(const tls_files& files);

}  // namespace troupe
