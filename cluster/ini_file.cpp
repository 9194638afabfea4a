#include "cluster/ini_file.hpp"

#include <sstream>

#include "base/read_file.hpp"

namespace troupe {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::string ini_file::where(int line) const { return path.string() + ":" + std::to_string(line) + ": "; }

result<ini_file> parse_ini(const std::string& text, const std::filesystem::path& path) {
  ini_file file{path, {}};
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string where = file.where(number);
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') return error{where + "a section header must end with ']'"};
      std::string name = trim(line.substr(1, line.size() - 2));
      if (name.empty()) return error{where + "a section header needs a name between the brackets"};
      for (const auto& s : file.sections)
        if (s.name == name)
          return error{where + "[" + name + "] again; it was opened at line " + std::to_string(s.line)};
      file.sections.push_back({std::move(name), number, {}});
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) return error{where + "expected `key = value` or a [section] header"};
    if (file.sections.empty()) return error{where + "a key before any [section]"};
    std::string key = trim(line.substr(0, eq));
    if (key.empty()) return error{where + "expected `key = value`: the key is missing"};
    auto& section = file.sections.back();
    for (const auto& e : section.entries)
      if (e.key == key)
        return error{where + "`" + key + "` again in [" + section.name + "]; it was set at line " +
                     std::to_string(e.line)};
    section.entries.push_back({std::move(key), trim(line.substr(eq + 1)), number});
  }
  return file;
}

result<ini_file> read_ini_file(const std::filesystem::path& path) {
  auto text = read_text_file(path);
  if (!text) return text.err();
  return parse_ini(*text, path);
}

}  // namespace troupe
