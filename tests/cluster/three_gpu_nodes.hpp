#pragma once
// The cluster the GPU placement tests read: three GPU nodes, g and h on cuda:0 of their
// hosts and e on cuda:1 of its own, with the replica section given.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <boost/test/unit_test.hpp>

#include "cluster/cluster_spec.hpp"

namespace troupe::test {

inline cluster_spec three_gpu_nodes(const std::string& replica) {
  const auto file =
      std::filesystem::temp_directory_path() / ("troupe_gpu_nodes_" + std::to_string(::getpid()) + ".conf");
  std::ofstream(file)
      << "[cluster]\nsecret = s\ninsecure = yes\n[model]\npath = m\n"
      << "[node.g]\naddress = 10.0.0.1\ndevices = cuda:0\n[node.h]\naddress = 10.0.0.2\ndevices = cuda:0\n"
      << "[node.e]\naddress = 10.0.0.3\ndevices = cuda:1\n"
      << replica;
  auto spec = read_cluster_spec(file);
  std::filesystem::remove(file);
  BOOST_REQUIRE_MESSAGE(spec, (spec ? "" : spec.err().message));
  return std::move(spec).value();
}

}  // namespace troupe::test
