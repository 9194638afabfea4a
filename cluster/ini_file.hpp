#pragma once
// The syntax of cluster.conf: `[section]` headers, `key = value` lines, '#' to the end of a
// line is a comment. Only the shape is checked here (malformed lines, a key outside any
// section, a section or a key given twice); what the sections and keys mean is
// cluster_spec's job. Each section and entry keeps its line for later error messages.
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe {

struct ini_entry {
  std::string key;
  std::string value;  // trimmed; may be empty
  int line = 0;
};

struct ini_section {
  std::string name;  // between the brackets, trimmed
  int line = 0;
  std::vector<ini_entry> entries;  // in file order
};

struct ini_file {
  std::filesystem::path path;
  std::vector<ini_section> sections;  // in file order

  // "PATH:LINE: ", the prefix of every error about that line.
  std::string where(int line) const;
};

result<ini_file> parse_ini(const std::string& text, const std::filesystem::path& path);
result<ini_file> read_ini_file(const std::filesystem::path& path);

}  // namespace troupe
