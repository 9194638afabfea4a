#include "cluster/conf_sections.hpp"

namespace troupe {

status read_entries(const ini_file& file, const ini_section& section, const std::map<std::string, setter>& setters,
                    const std::set<std::string>& may_be_empty) {
  for (const auto& e : section.entries) {
    auto set = setters.find(e.key);
    if (set == setters.end()) {
      std::string known;
      for (const auto& [key, unused] : setters) known += (known.empty() ? "" : ", ") + key;
      return error{file.where(e.line) + "unknown key `" + e.key + "` in [" + section.name + "] (" + known + ")"};
    }
    if (e.value.empty() && !may_be_empty.count(e.key))
      return error{file.where(e.line) + "`" + e.key + "` needs a value"};
    if (auto s = set->second(e); !s) return s;
  }
  return ok();
}

setter integer(const ini_file& file, int& field, int min, int max) {
  return [&file, &field, min, max](const ini_entry& e) -> status {
    auto v = integer_value(file, e, min, max);
    if (!v) return v.err();
    field = *v;
    return ok();
  };
}

setter text(std::string& field) {
  return [&field](const ini_entry& e) -> status {
    field = e.value;
    return ok();
  };
}

}  // namespace troupe
