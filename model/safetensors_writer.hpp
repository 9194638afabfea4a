#pragma once
// Writes Hugging Face safetensors: one file, or shards plus model.safetensors.index.json.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/result.hpp"

namespace troupe {

struct tensor_to_write {
  std::string name;
  dtype type = dtype::bf16;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

status write_safetensors_file(const std::filesystem::path& path, const std::vector<tensor_to_write>& tensors);

// Splits `tensors` (in order) into shards of at most `max_shard_bytes` and writes them as
// model-0000K-of-0000N.safetensors with the index; a single shard is model.safetensors.
status write_checkpoint(const std::filesystem::path& dir, const std::vector<tensor_to_write>& tensors,
                        size_t max_shard_bytes);

}  // namespace troupe
