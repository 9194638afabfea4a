#pragma once
#include <filesystem>
#include <random>
#include <string>

namespace troupe::test {

// A fresh directory under the system temp dir, removed with the object.
class temp_dir {
 public:
  explicit temp_dir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() / ("troupe_" + tag + "_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace troupe::test
