#include "cli/cluster_conf.hpp"

#include <map>
#include <sstream>

#include "base/read_file.hpp"

namespace troupe::cli {
namespace {

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// section -> key -> flag. "node.*" stands for the (single) node's section.
const std::map<std::string, std::map<std::string, std::string>> flags_by_key = {
    {"model", {{"path", "--model"}, {"served_model_name", "--served-model-name"}, {"load_format", "--load-format"}}},
    {"gateway", {{"host", "--host"}, {"port", "--port"}, {"api_key", "--api-key"}, {"max_pending", "--max-pending"}}},
    {"engine", {{"max_num_seqs", "--max-num-seqs"}, {"max_num_batched_tokens", "--max-num-batched-tokens"},
                {"max_model_len", "--max-model-len"}, {"kv_cache_mb", "--kv-cache-mb"}, {"block_size", "--block-size"},
                {"pipeline_stages", "--pipeline-stages"}}},
    {"node.*", {{"address", ""}, {"devices", "--device"}, {"expert_groups", "--expert-groups"}}},
};

}  // namespace

result<std::vector<std::string>> cluster_conf_flags(const std::filesystem::path& file) {
  auto text = read_text_file(file);
  if (!text) return text.err();
  std::vector<std::string> flags;
  std::istringstream lines(*text);
  std::string line, section, node;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string where = file.string() + ":" + std::to_string(number) + ": ";
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') return error{where + "a section header must end with ']'"};
      section = trim(line.substr(1, line.size() - 2));
      if (section.rfind("node.", 0) == 0) {
        if (!node.empty())
          return error{where + "a second node ([" + section + "]); this build serves one node per process"};
        node = section;
        section = "node.*";
      } else if (!flags_by_key.count(section)) {
        return error{where + "unknown section [" + section + "] (model, gateway, engine, node.NAME)"};
      }
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) return error{where + "expected `key = value`"};
    if (section.empty()) return error{where + "a key before any [section]"};
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    const auto& keys = flags_by_key.at(section);
    auto flag = keys.find(key);
    if (flag == keys.end()) {
      std::string known;
      for (const auto& [k, f] : keys) known += (known.empty() ? "" : ", ") + k;
      return error{where + "unknown key `" + key + "` in [" + (section == "node.*" ? node : section) + "] (" + known + ")"};
    }
    if (flag->second.empty()) continue;  // the node's address matters to clusters only
    if (value.empty() && key != "api_key") return error{where + "`" + key + "` needs a value"};
    std::string v = value;
    if (key == "path" && std::filesystem::path(v).is_relative()) v = (file.parent_path() / v).lexically_normal().string();
    flags.push_back(flag->second);
    flags.push_back(v);
  }
  return flags;
}

}  // namespace troupe::cli
