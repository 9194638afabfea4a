#include "base/read_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace troupe {

result<std::string> read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error{path.string() + ": cannot open: " + std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return error{path.string() + ": read failed"};
  return text.str();
}

}  // namespace troupe
