#pragma once
// cluster.conf for `troupe serve`: a single-node file (cluster/cluster_spec.hpp) read as the
// serve flags its keys stand for, so a config file and the command line mean the same thing.
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe::cli {

// The flags a single-node cluster.conf stands for ("--max-num-seqs", "64", ...), one pair
// per key the file sets, in file order. Any mistake read_cluster_spec finds is an error
// naming file and line, and so is a cluster's file (several nodes, [cluster], [replica.*]).
result<std::vector<std::string>> cluster_conf_flags(const std::filesystem::path& file);

}  // namespace troupe::cli
