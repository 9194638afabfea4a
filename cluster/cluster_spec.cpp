#include "cluster/cluster_spec.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>

#include "base/read_file.hpp"
#include "cluster/conf_sections.hpp"
#include "cluster/conf_values.hpp"
#include "cluster/replica_layout.hpp"

namespace troupe {
namespace {

// One of the words in `names`, stored as the value paired with it.
template <class T>
setter choice(const ini_file& file, T& field, const std::vector<std::pair<std::string, T>>& names) {
  return [&file, &field, names](const ini_entry& e) -> status {
    std::string listed;
    for (const auto& [name, value] : names) {
      if (name == e.value) {
        field = value;
        return ok();
      }
      listed += (listed.empty() ? "" : " or ") + name;
    }
    return error{file.where(e.line) + "`" + e.key + "` must be " + listed + ", not \"" + e.value + "\""};
  };
}

// Keys that size a single process's engine; a cluster says the same per replica.
setter single_node_only(const ini_file& file, const cluster_spec& spec, setter set, const char* instead) {
  return [&file, &spec, set, instead](const ini_entry& e) -> status {
    if (spec.is_cluster)
      return error{file.where(e.line) + "`" + e.key + "` is for single-node files; in a cluster " + instead};
    return set(e);
  };
}

// Like ssh with private keys: a secret others can read is no secret.
result<std::string> read_secret_file(const ini_file& file, const ini_entry& e) {
  const auto path = (file.path.parent_path() / e.value).lexically_normal();
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return error{file.where(e.line) + "`secret_file` " + path.string() + " is not a readable file"};
  if (info.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(info.st_mode & 07777));
    return error{file.where(e.line) + "`secret_file` " + path.string() + " is open to group or others (mode " + mode +
                 "); only its owner may read it: chmod 600 " + path.string()};
  }
  auto secret = read_text_file(path);
  if (!secret) return error{file.where(e.line) + "`secret_file`: " + secret.err().message};
  while (!secret->empty() && std::isspace(static_cast<unsigned char>(secret->back()))) secret->pop_back();
  if (secret->empty()) return error{file.where(e.line) + "`secret_file` " + path.string() + " is empty"};
  return std::move(*secret);
}

status read_cluster(const ini_file& file, const ini_section& section, cluster_spec& spec) {
  auto& c = spec.cluster;
  int secret_line = 0, heartbeat_line = 0, timeout_line = 0;
  auto secret_once = [&](const ini_entry& e) -> status {
    if (secret_line)
      return error{file.where(e.line) + "give `secret` or `secret_file`, not both (the other is at line " +
                   std::to_string(secret_line) + ")"};
    secret_line = e.line;
    return ok();
  };
  auto s = read_entries(
      file, section,
      {
          {"name",
           [&](const ini_entry& e) -> status {
             c.name = e.value;
             return check_name(file, e.line, "cluster", c.name);
           }},
          {"secret",
           [&](const ini_entry& e) -> status {
             if (auto once = secret_once(e); !once) return once;
             c.secret = e.value;
             return ok();
           }},
          {"secret_file",
           [&](const ini_entry& e) -> status {
             if (auto once = secret_once(e); !once) return once;
             auto secret = read_secret_file(file, e);
             if (!secret) return secret.err();
             c.secret = std::move(*secret);
             return ok();
           }},
          {"transport",
           choice<transport_kind>(file, c.transport, {{"ucx", transport_kind::ucx}, {"nccl", transport_kind::nccl}})},
          {"heartbeat_interval_ms",
           [&](const ini_entry& e) {
             heartbeat_line = e.line;
             return positive_duration(file, c.heartbeat_interval)(e);
           }},
          {"connection_timeout_ms",
           [&](const ini_entry& e) {
             timeout_line = e.line;
             return positive_duration(file, c.connection_timeout)(e);
           }},
          {"startup_timeout_s", positive_duration(file, c.startup_timeout)},
          {"step_timeout_s", positive_duration(file, c.step_timeout)},
          {"max_node_restarts", integer(file, c.max_node_restarts, 1)},
          {"node_restart_window_s", positive_duration(file, c.node_restart_window)},
          {"certs",
           [&](const ini_entry& e) -> status {
             c.certs = (file.path.parent_path() / e.value).lexically_normal();
             return ok();
           }},
          {"insecure", choice<bool>(file, c.insecure, {{"yes", true}, {"no", false}})},
      });
  if (!s) return s;
  // A node is declared down after connection_timeout without a heartbeat; with no room
  // for one heartbeat to arrive, every node would flap.
  if (c.connection_timeout <= c.heartbeat_interval)
    return error{file.where(std::max({timeout_line, heartbeat_line, section.line})) + "connection_timeout_ms (" +
                 std::to_string(c.connection_timeout.count()) + ") must be longer than heartbeat_interval_ms (" +
                 std::to_string(c.heartbeat_interval.count()) + ")"};
  return ok();
}

status read_model(const ini_file& file, const ini_section& section, cluster_spec& spec) {
  auto& m = spec.model;
  return read_entries(file, section,
                      {
                          {"path",
                           [&](const ini_entry& e) -> status {
                             m.path = (file.path.parent_path() / e.value).lexically_normal();
                             if (!m.path.has_filename()) m.path = m.path.parent_path();  // "models/demo/"
                             return ok();
                           }},
                          {"served_model_name", text(m.served_model_name)},
                          {"load_format", choice<weight_format>(file, m.load_format,
                                                                {{"safetensors", weight_format::safetensors},
                                                                 {"dummy", weight_format::dummy}})},
                      });
}

status read_gateway(const ini_file& file, const ini_section& section, cluster_spec& spec) {
  auto& g = spec.gateway;
  int protect_line = 0;
  auto s = read_entries(file, section,
                        {
                            {"host",
                             [&](const ini_entry& e) -> status {
                               if (auto s = check_address(file, e); !s) return s;
                               g.host = e.value;
                               return ok();
                             }},
                            {"port", integer(file, g.port, 0, 65535)},
                            {"api_key", text(g.api_key)},
                            {"admin_key", text(g.admin_key)},
                            {"protect_metrics",
                             [&](const ini_entry& e) {
                               protect_line = e.line;
                               return choice<bool>(file, g.protect_metrics, {{"yes", true}, {"no", false}})(e);
                             }},
                            {"special_tokens_in_content",
                             choice<bool>(file, g.special_tokens_in_content, {{"yes", true}, {"no", false}})},
                            {"max_pending", integer(file, g.max_pending, 1)},
                            {"max_connections", integer(file, g.max_connections, 1)},
                            {"send_timeout_ms", positive_duration(file, g.send_timeout)},
                            {"node", text(g.node)},
                            {"routing", choice<std::string>(file, g.routing,
                                                            {{"round_robin", "round_robin"},
                                                             {"least_load", "least_load"},
                                                             {"prefix_aware", "prefix_aware"}})},
                        },
                        /*may_be_empty=*/{"api_key", "admin_key"});
  if (!s) return s;
  if (g.protect_metrics && g.api_key.empty() && g.admin_key.empty())
    return error{file.where(protect_line) + "protect_metrics = yes needs an `api_key` or an `admin_key` to ask for"};
  return ok();
}

status read_engine(const ini_file& file, const ini_section& section, cluster_spec& spec) {
  auto& n = spec.engine;
  return read_entries(file, section,
                      {
                          {"max_num_seqs", integer(file, n.max_num_seqs, 1)},
                          {"max_num_batched_tokens", integer(file, n.max_num_batched_tokens, 1)},
                          {"max_model_len", integer(file, n.max_model_len, 0)},
                          {"kv_cache_mb", integer(file, n.kv_cache_mb, 0)},
                          {"block_size", integer(file, n.block_size, 1)},
                          {"progress_timeout_ms", positive_duration(file, n.progress_timeout)},
                          {"pipeline_micro_batches", integer(file, n.pipeline_micro_batches, 0)},
                          {"pipeline_stages", single_node_only(file, spec, integer(file, n.pipeline_stages, 1),
                                                               "each [replica.NAME] lists its `stages`")},
                      });
}

status read_node(const ini_file& file, const ini_section& section, const std::string& name, cluster_spec& spec) {
  if (auto s = check_name(file, section.line, "node", name); !s) return s;
  node_spec n{name, "", 7100, {}, 1, "", section.line};
  int netns_line = 0;
  auto s = read_entries(
      file, section,
      {
          {"address",
           [&](const ini_entry& e) -> status {
             if (auto a = check_address(file, e); !a) return a;
             n.address = e.value;
             return ok();
           }},
          {"port", integer(file, n.port, 0, 65535)},
          {"devices",
           [&](const ini_entry& e) -> status {
             auto gpus = devices_value(file, e);
             if (!gpus) return gpus.err();
             n.gpus = std::move(*gpus);
             return ok();
           }},
          {"expert_groups",
           single_node_only(file, spec, integer(file, n.expert_groups, 1), "each [replica.NAME] lists its `experts`")},
          {"netns",
           [&](const ini_entry& e) -> status {
             netns_line = e.line;
             n.netns = e.value;
             if (n.netns.find_first_of("/ ") != std::string::npos || n.netns == "." || n.netns == "..")
               return error{file.where(e.line) + "`netns` is the name of a network namespace (ip netns), not " +
                            e.value};
             return ok();
           }},
      });
  if (!s) return s;
  if (spec.is_cluster && n.address.empty())
    return error{file.where(section.line) + "[" + section.name + "] needs `address`: where the other nodes reach it"};
  if (!n.netns.empty() && (!spec.is_cluster || n.port != 0))
    return error{file.where(netns_line) +
                 "`netns` is for a node of a cluster that `troupe cluster up` starts on this host "
                 "(port 0)"};
  spec.nodes.push_back(std::move(n));
  return ok();
}

status read_replica(const ini_file& file, const ini_section& section, const std::string& name, cluster_spec& spec) {
  if (auto s = check_name(file, section.line, "replica", name); !s) return s;
  replica_spec r{name, {}, {}, 1, section.line};
  auto placements = [&](std::vector<placement>& field) {
    return [&file, &field](const ini_entry& e) -> status {
      auto v = placements_value(file, e);
      if (!v) return v.err();
      field = std::move(*v);
      return ok();
    };
  };
  auto s = read_entries(file, section,
                        {
                            {"stages", placements(r.stages)},
                            {"experts", placements(r.experts)},
                            {"weight",
                             [&](const ini_entry& e) -> status {
                               auto w = non_negative_value(file, e);
                               if (!w) return w.err();
                               r.weight = *w;
                               return ok();
                             }},
                            {"start", choice<bool>(file, r.start, {{"yes", true}, {"no", false}})},
                        });
  if (!s) return s;
  spec.replicas.push_back(std::move(r));
  return ok();
}

status read_section(const ini_file& file, const ini_section& section, cluster_spec& spec) {
  const auto& name = section.name;
  if (name == "cluster") return read_cluster(file, section, spec);
  if (name == "model") return read_model(file, section, spec);
  if (name == "gateway") return read_gateway(file, section, spec);
  if (name == "engine") return read_engine(file, section, spec);
  if (name.rfind("node.", 0) == 0) return read_node(file, section, name.substr(5), spec);
  if (name.rfind("replica.", 0) == 0) return read_replica(file, section, name.substr(8), spec);
  return error{file.where(section.line) + "unknown section [" + name +
               "] (cluster, model, gateway, engine, node.NAME, replica.NAME)"};
}

int line_of(const ini_file& file, const std::string& section) {
  for (const auto& s : file.sections)
    if (s.name == section) return s.line;
  return 1;
}

int line_of(const ini_file& file, const std::string& section, const std::string& key) {
  for (const auto& s : file.sections)
    for (const auto& e : s.entries)
      if (s.name == section && e.key == key) return e.line;
  return line_of(file, section);
}

// The nodes: distinct endpoints, the gateway's one defined, a secret when they are several.
status check_nodes(const ini_file& file, cluster_spec& spec) {
  std::map<std::string, const node_spec*> endpoints;
  for (const auto& n : spec.nodes) {
    if (!spec.is_cluster || n.port == 0) continue;
    auto [at, fresh] = endpoints.emplace(address_key(n.address) + " " + std::to_string(n.port), &n);
    if (!fresh)
      return error{file.where(n.line) + "node " + n.name + " has the address and port of node " + at->second->name +
                   " (line " + std::to_string(at->second->line) + "): " + n.address + " port " +
                   std::to_string(n.port)};
  }
  if (spec.gateway.node.empty() && !spec.nodes.empty()) spec.gateway.node = spec.nodes.front().name;
  if (!spec.gateway.node.empty() && !spec.node(spec.gateway.node))
    return error{file.where(line_of(file, "gateway", "node")) + "[gateway] node `" + spec.gateway.node +
                 "` is not defined by any [node." + spec.gateway.node + "]"};
  // `troupe cluster up` starts the nodes of port 0 on this host; the gateway's node is its
  // own process, which no other node connects to.
  for (const auto& n : spec.nodes) {
    if (spec.is_cluster && n.port == 0 && !is_loopback_address(n.address) && n.netns.empty() &&
        n.name != spec.gateway.node)
      return error{file.where(line_of(file, "node." + n.name, "port")) +
                   "port 0 (any free port) is for nodes on this "
                   "host (127.0.0.1, ::1, localhost, or in a `netns`); node " +
                   n.name + " at " + n.address + " needs a fixed port"};
  }
  if (const node_spec* g = spec.node(spec.gateway.node); g && !g->netns.empty())
    return error{file.where(line_of(file, "node." + g->name, "netns")) + "node " + g->name +
                 " runs the gateway, in the process of `troupe cluster up`: it takes no `netns`"};
  if (spec.is_cluster && spec.nodes.empty())
    return error{file.where(file.sections.front().line) + "a cluster needs at least one [node.NAME]"};
  if (spec.nodes.size() > 1 && spec.cluster.secret.empty())
    return error{file.where(spec.nodes[1].line) + "a cluster of several nodes needs a secret they present to join: " +
                 "`secret = ...` or `secret_file = PATH` in [cluster]"};
  if (spec.nodes.size() > 1 && spec.cluster.certs.empty() && !spec.cluster.insecure)
    return error{file.where(spec.nodes[1].line) + "a cluster of several nodes links them with mutual TLS: give " +
                 "`certs = DIR` in [cluster] and run `troupe cluster certs " + file.path.string() +
                 "` to make them, or set `insecure = yes` (plaintext, unauthenticated: trusted networks only)"};
  if (!spec.cluster.certs.empty() && spec.cluster.insecure)
    return error{file.where(line_of(file, "cluster", "insecure")) + "give `certs` or `insecure = yes`, not both"};
  return ok();
}

}  // namespace

bool is_loopback_address(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

std::vector<std::string> link_addresses(const cluster_spec& spec, const node_spec& me) {
  std::vector<std::string> out{me.address};
  for (const node_spec& n : spec.nodes)
    if (std::find(out.begin(), out.end(), n.address) == out.end()) out.push_back(n.address);
  return out;
}

const ini_section* first_cluster_section(const ini_file& file) {
  const ini_section* node = nullptr;
  for (const auto& s : file.sections) {
    if (s.name == "cluster" || s.name.rfind("replica.", 0) == 0) return &s;
    if (s.name.rfind("node.", 0) != 0) continue;
    if (node) return &s;
    node = &s;
  }
  return nullptr;
}

const node_spec* cluster_spec::node(std::string_view name) const {
  for (const auto& n : nodes)
    if (n.name == name) return &n;
  return nullptr;
}

result<cluster_spec> cluster_spec_of(const ini_file& file) {
  cluster_spec spec;
  spec.file = file.path;
  // Decided before any key is read: a cluster's file refuses some keys and requires others.
  spec.is_cluster = first_cluster_section(file) != nullptr;
  for (const auto& section : file.sections)
    if (auto s = read_section(file, section, spec); !s) return s.err();
  if (spec.model.served_model_name.empty()) spec.model.served_model_name = spec.model.path.filename().string();
  if (spec.is_cluster && spec.model.path.empty())
    return error{file.where(line_of(file, "model")) +
                 "a cluster file needs `path` in [model]: the checkpoint every node loads"};
  if (auto s = check_nodes(file, spec); !s) return s.err();
  if (auto s = lay_out_replicas(file, spec); !s) return s.err();
  return spec;
}

result<cluster_spec> read_cluster_spec(const std::filesystem::path& file) {
  auto ini = read_ini_file(file);
  if (!ini) return ini.err();
  return cluster_spec_of(*ini);
}

std::vector<std::string> served_model_names(const std::string& served_model_name) {
  std::vector<std::string> names;
  std::istringstream words(served_model_name);
  for (std::string name; words >> name;) names.push_back(name);
  return names;
}

}  // namespace troupe
