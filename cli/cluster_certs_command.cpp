// `troupe cluster certs FILE`: the cluster's CA and a certificate and key for each node of
// FILE, in the folder its [cluster] `certs` names. Existing files are kept, so running it
// again after adding a node makes only that node's. ca.key signs them: keep it off the
// nodes, each of which needs ca.crt and its own NODE.crt and NODE.key.
#include <cstdio>

#include "cli/commands.hpp"
#include "cluster/cert_authority.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe::cli {

int cluster_certs_command(int argc, char** argv) {
  if (argc != 1 || argv[0][0] == '-') {
    std::fprintf(stderr, "usage: troupe cluster certs FILE\n");
    return 2;
  }
  auto spec = read_cluster_spec(argv[0]);
  if (!spec) {
    std::fprintf(stderr, "troupe cluster certs: %s\n", spec.err().message.c_str());
    return 2;
  }
  if (spec->cluster.insecure) {
    std::fprintf(stderr, "troupe cluster certs: %s says `insecure = yes`: replace it with `certs = DIR` first\n",
                 argv[0]);
    return 2;
  }
  auto made = make_cluster_certs(*spec);
  if (!made) {
    std::fprintf(stderr, "troupe cluster certs: %s\n", made.err().message.c_str());
    return 1;
  }
  for (const auto& file : *made) std::printf("wrote %s\n", file.c_str());
  std::printf("%s: a CA and a certificate for each of %zu node(s)%s\n", spec->cluster.certs.c_str(), spec->nodes.size(),
              made->empty() ? " were there already" : "");
  return 0;
}

}  // namespace troupe::cli
