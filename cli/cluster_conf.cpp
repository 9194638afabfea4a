#include "cli/cluster_conf.hpp"

#include <map>

#include "cluster/cluster_spec.hpp"
#include "cluster/ini_file.hpp"

namespace troupe::cli {
namespace {

// section -> key -> flag; "node" stands for the node's section. Keys without a flag
// (address, port, [gateway] node) matter to clusters only.
const std::map<std::string, std::map<std::string, std::string>> flags_by_key = {
    {"model", {{"path", "--model"}, {"served_model_name", "--served-model-name"}, {"load_format", "--load-format"}}},
    {"gateway",
     {{"host", "--host"},
      {"port", "--port"},
      {"api_key", "--api-key"},
      {"max_pending", "--max-pending"},
      {"max_connections", "--max-connections"},
      {"send_timeout_ms", "--send-timeout-ms"},
      {"admin_key", "--admin-key"},
      {"protect_metrics", "--protect-metrics"},
      {"special_tokens_in_content", "--special-tokens-in-content"}}},
    {"engine",
     {{"max_num_seqs", "--max-num-seqs"},
      {"max_num_batched_tokens", "--max-num-batched-tokens"},
      {"max_model_len", "--max-model-len"},
      {"kv_cache_mb", "--kv-cache-mb"},
      {"block_size", "--block-size"},
      {"pipeline_stages", "--pipeline-stages"},
      {"pipeline_micro_batches", "--pipeline-micro-batches"},
      {"progress_timeout_ms", "--progress-timeout-ms"}}},
    {"node", {{"devices", "--device"}, {"expert_groups", "--expert-groups"}}},
};

// `troupe serve` runs on the CPU or on one GPU, the first.
result<std::string> device_flag(const ini_file& file, const ini_entry& e, const node_spec& node) {
  if (node.gpus.empty()) return std::string("cpu");
  if (node.gpus == std::vector<int>{0}) return std::string("cuda");
  return error{file.where(e.line) + "`troupe serve` runs on the CPU or one GPU (devices = cpu, cuda or cuda:0), not " +
               e.value + "; several GPUs make a cluster"};
}

}  // namespace

result<std::vector<std::string>> cluster_conf_flags(const std::filesystem::path& path) {
  auto file = read_ini_file(path);
  if (!file) return file.err();
  if (const auto* s = first_cluster_section(*file))
    return error{file->where(s->line) + "this file describes a cluster: start it with `troupe cluster up " +
                 path.string() + "` ([" + s->name + "] makes it one; `troupe serve` takes a single node)"};
  auto spec = cluster_spec_of(*file);
  if (!spec) return spec.err();
  std::vector<std::string> flags;
  for (const auto& section : file->sections) {
    const auto keys = flags_by_key.find(section.name.rfind("node.", 0) == 0 ? "node" : section.name);
    TROUPE_CHECK(keys != flags_by_key.end(), "a single-node spec holds only sections that have flags");
    for (const auto& e : section.entries) {
      auto flag = keys->second.find(e.key);
      if (flag == keys->second.end()) continue;
      std::string value = e.value;
      if (e.key == "path") value = spec->model.path.string();
      if (e.key == "devices") {
        auto device = device_flag(*file, e, spec->nodes.front());
        if (!device) return device.err();
        value = *device;
      }
      flags.push_back(flag->second);
      if (e.key == "protect_metrics" || e.key == "special_tokens_in_content") {  // switches
        if (e.value != "yes") flags.pop_back();
        continue;
      }
      flags.push_back(value);
    }
  }
  return flags;
}

}  // namespace troupe::cli
