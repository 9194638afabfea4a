#pragma once
// Hugging Face safetensors checkpoints, memory-mapped: one model.safetensors, or shards
// listed by model.safetensors.index.json. Every header is checked against its file.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/mapped_file.hpp"
#include "base/result.hpp"

namespace troupe {

struct tensor_entry {
  std::string name;
  dtype type = dtype::f32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t nbytes = 0;
  std::string file;  // the shard it lives in, for error messages
};

class checkpoint {
 public:
  // Opens DIR/model.safetensors.index.json with its shards, else DIR/model.safetensors.
  static result<checkpoint> open(const std::filesystem::path& dir);
  // Opens one .safetensors file.
  static result<checkpoint> open_file(const std::filesystem::path& file);

  const tensor_entry* find(const std::string& name) const;
  const std::map<std::string, tensor_entry>& tensors() const { return tensors_; }
  size_t file_count() const { return files_.size(); }

 private:
  status add_file(const std::filesystem::path& file);

  std::vector<std::shared_ptr<mapped_file>> files_;
  std::map<std::string, tensor_entry> tensors_;
};

}  // namespace troupe
