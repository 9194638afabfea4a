#pragma once
// The value syntaxes of cluster.conf, each checked where it is read: bounded integers,
// numbers, node and replica names, addresses, GPU lists and placement lists. Errors name
// the entry's file, line and key and say what was expected.
#include <string>
#include <vector>

#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/ini_file.hpp"

namespace troupe {

result<int> integer_value(const ini_file& file, const ini_entry& e, int min, int max);
result<double> non_negative_value(const ini_file& file, const ini_entry& e);
// [a-z0-9_-]+: names of nodes and replicas; `what` is "node" or "replica".
status check_name(const ini_file& file, int line, const std::string& what, const std::string& name);
// A host name (RFC 1123 labels) or an IPv4 or IPv6 literal.
status check_address(const ini_file& file, const ini_entry& e);
// What two spellings of one checked address share: IP literals in canonical form, host
// names in lowercase.
std::string address_key(const std::string& address);
// "cpu", "cuda" (GPU 0) or "cuda:0,1,...": the GPU ordinals, none for the CPU.
result<std::vector<int>> devices_value(const ini_file& file, const ini_entry& e);
// "node[:gpu]:first-last, ...": the ranges as written (nodes and GPUs unchecked).
result<std::vector<placement>> placements_value(const ini_file& file, const ini_entry& e);

}  // namespace troupe
