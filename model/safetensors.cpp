#include "model/safetensors.hpp"

#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "base/read_file.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

result<dtype> parse_dtype(const std::string& s) {
  if (s == "F32") return dtype::f32;
  if (s == "F16") return dtype::f16;
  if (s == "BF16") return dtype::bf16;
  return error{"dtype " + s + " is not supported (F32, F16, BF16 are)"};
}

// One header entry: {"dtype":..., "shape":[...], "data_offsets":[begin,end]}.
result<tensor_entry> parse_entry(const std::string& name, const json& e, const std::byte* data, size_t data_size) {
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets") ||
      !e["dtype"].is_string() || !e["shape"].is_array() || !e["data_offsets"].is_array() ||
      e["data_offsets"].size() != 2)
    return error{"tensor " + name + ": header entry needs dtype, shape and two data_offsets"};
  auto type = parse_dtype(e["dtype"].get<std::string>());
  if (!type) return error{"tensor " + name + ": " + type.err().message};
  tensor_entry t;
  t.name = name;
  t.type = *type;
  uint64_t count = 1;
  for (const json& d : e["shape"]) {
    if (!d.is_number_unsigned()) return error{"tensor " + name + ": shape must be non-negative integers"};
    uint64_t v = d.get<uint64_t>();
    if (v != 0 && count > (uint64_t(1) << 48) / v) return error{"tensor " + name + ": shape too large"};
    count *= v;
    t.shape.push_back(int64_t(v));
  }
  const json& off = e["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    return error{"tensor " + name + ": data_offsets must be non-negative integers"};
  uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end) return error{"tensor " + name + ": data_offsets begin after they end"};
  if (end > data_size)
    return error{"tensor " + name + ": data_offsets end at byte " + std::to_string(end) + " but the file holds " +
                 std::to_string(data_size) + " bytes of data (truncated file, or a header that lies about offsets)"};
  if (end - begin != count * dtype_size(t.type))
    return error{"tensor " + name + ": shape and dtype need " + std::to_string(count * dtype_size(t.type)) +
                 " bytes but data_offsets span " + std::to_string(end - begin)};
  t.data = data + begin;
  t.nbytes = size_t(end - begin);
  return t;
}

}  // namespace

status checkpoint::add_file(const std::filesystem::path& file) {
  auto mapped = mapped_file::open(file);
  if (!mapped) return mapped.err();
  const auto& m = *mapped;
  const std::string where = file.string() + ": ";
  if (m->size() < 8)
    return error{where + "too short to be a safetensors file (" + std::to_string(m->size()) + " bytes)"};
  uint64_t header_len = 0;
  std::memcpy(&header_len, m->data(), 8);  // little-endian u64, as on every host we target
  if (header_len > m->size() - 8)
    return error{where + "header claims " + std::to_string(header_len) + " bytes but the file has " +
                 std::to_string(m->size() - 8) + " after the length (truncated or not safetensors)"};
  const char* header_text = reinterpret_cast<const char*>(m->data() + 8);
  json header = json::parse(header_text, header_text + header_len, nullptr, false);
  if (header.is_discarded() || !header.is_object()) return error{where + "header is not a JSON object"};
  const std::byte* data = m->data() + 8 + header_len;
  size_t data_size = m->size() - 8 - size_t(header_len);
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    auto entry = parse_entry(it.key(), it.value(), data, data_size);
    if (!entry) return error{where + entry.err().message};
    entry->file = file.string();
    if (tensors_.count(it.key())) return error{where + "tensor " + it.key() + " appears in two files"};
    tensors_.emplace(it.key(), std::move(*entry));
  }
  files_.push_back(*mapped);
  return ok();
}

result<checkpoint> checkpoint::open_file(const std::filesystem::path& file) {
  checkpoint c;
  if (auto s = c.add_file(file); !s) return s.err();
  return c;
}

result<checkpoint> checkpoint::open(const std::filesystem::path& dir) {
  auto index_path = dir / "model.safetensors.index.json";
  if (!std::filesystem::exists(index_path)) {
    auto single = dir / "model.safetensors";
    if (!std::filesystem::exists(single))
      return error{dir.string() + ": no model.safetensors or model.safetensors.index.json"};
    return open_file(single);
  }
  auto text = read_text_file(index_path);
  if (!text) return text.err();
  json index = json::parse(*text, nullptr, false);
  if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    return error{index_path.string() + ": expected a JSON object with a \"weight_map\" object"};
  std::set<std::string> shards;
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      return error{index_path.string() + ": weight_map entry " + it.key() + " must name a file"};
    shards.insert(it.value().get<std::string>());
  }
  checkpoint c;
  for (const auto& shard : shards) {
    auto path = dir / shard;
    if (!std::filesystem::exists(path))
      return error{index_path.string() + " lists shard " + shard + ", which is missing"};
    if (auto s = c.add_file(path); !s) return s.err();
  }
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    auto found = c.tensors_.find(it.key());
    const std::string shard = it.value().get<std::string>();
    if (found == c.tensors_.end() || std::filesystem::path(found->second.file).filename() != shard)
      return error{index_path.string() + " says tensor " + it.key() + " is in " + shard +
                   ", but that shard does not hold it"};
  }
  return c;
}

const tensor_entry* checkpoint::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace troupe
