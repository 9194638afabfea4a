#include "model/safetensors_writer.hpp"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace troupe {

status write_safetensors_file(const std::filesystem::path& path, const std::vector<tensor_to_write>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", std::string(dtype_name(t.type))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return error{path.string() + ": cannot create"};
  const uint64_t len = text.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out.write(text.data(), std::streamsize(text.size()));
  for (const auto& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
  if (!out.flush()) return error{path.string() + ": write failed"};
  return ok();
}

status write_checkpoint(const std::filesystem::path& dir, const std::vector<tensor_to_write>& tensors,
                        size_t max_shard_bytes) {
  std::vector<std::vector<tensor_to_write>> shards(1);
  size_t current = 0;
  for (const auto& t : tensors) {
    if (current > 0 && current + t.bytes.size() > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(t);
    current += t.bytes.size();
  }
  if (shards.size() == 1) return write_safetensors_file(dir / "model.safetensors", shards[0]);

  nlohmann::ordered_json index;
  size_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    if (auto s = write_safetensors_file(dir / name, shards[i]); !s) return s;
    for (const auto& t : shards[i]) {
      index["weight_map"][t.name] = name;
      total += t.bytes.size();
    }
  }
  index["metadata"] = {{"total_size", total}};
  std::ofstream out(dir / "model.safetensors.index.json");
  out << index.dump(2) << "\n";
  if (!out.flush()) return error{(dir / "model.safetensors.index.json").string() + ": write failed"};
  return ok();
}

}  // namespace troupe
