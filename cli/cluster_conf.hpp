#pragma once
// cluster.conf: INI sections of `key = value` lines, '#' comments. Every key maps to a
// `troupe serve` flag, so a config file and the command line mean the same thing.
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe::cli {

// The flags a cluster.conf stands for ("--max-num-seqs", "64", ...), in file order. Unknown
// sections or keys, malformed lines and more than one node are errors naming file and line.
result<std::vector<std::string>> cluster_conf_flags(const std::filesystem::path& file);

}  // namespace troupe::cli
