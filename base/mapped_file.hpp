#pragma once
// A read-only memory map of a whole file; unmapped when the last owner lets go.
#include <cstddef>
#include <filesystem>
#include <memory>

#include "base/result.hpp"

namespace troupe {

class mapped_file {
 public:
  static result<std::shared_ptr<mapped_file>> open(const std::filesystem::path& path);
  ~mapped_file();
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  mapped_file(const std::byte* data, size_t size) : data_(data), size_(size) {}
  const std::byte* data_;
  size_t size_;
};

}  // namespace troupe
