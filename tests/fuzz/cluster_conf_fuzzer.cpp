// libFuzzer: cluster.conf (tests/fuzz/README.md): any bytes give a cluster, or an error
// with a message.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/check.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/ini_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  auto ini = parse_ini(std::string(reinterpret_cast<const char*>(data), size), "cluster.conf");
  if (!ini) {
    TROUPE_CHECK(!ini.err().message.empty(), "a refused file without a message");
    return 0;
  }
  auto spec = cluster_spec_of(*ini);
  if (!spec) TROUPE_CHECK(!spec.err().message.empty(), "a refused cluster without a message");
  return 0;
}
