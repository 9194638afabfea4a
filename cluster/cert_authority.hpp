#pragma once
// `troupe cluster certs`: a cluster's own CA and a certificate per node, for the mutual
// TLS of the control links. Keys are ECDSA P-256; the CA is valid 10 years, a node's
// certificate 2 years. What exists is kept: a node added to the file later gets its
// certificate from the same CA.
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe {

// Makes `spec.cluster.certs` (mode 0700) with ca.crt and ca.key if missing, then NODE.crt
// and NODE.key for every node that has none. The files written, in order.
result<std::vector<std::filesystem::path>> make_cluster_certs(const cluster_spec& spec);

}  // namespace troupe
