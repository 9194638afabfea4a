#pragma once
// Reading a section of an INI file (cluster.conf, chaos/drills.conf) into fields: each key
// the section takes maps to a setter that checks its value and stores it, and any other
// key is an error that lists the ones it takes. Errors name the file and line.
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "base/result.hpp"
#include "cluster/conf_values.hpp"
#include "cluster/ini_file.hpp"

namespace troupe {

inline constexpr int any_int = std::numeric_limits<int>::max();

using setter = std::function<status(const ini_entry&)>;

// Every entry through the setter of its key; a value may be empty only for the keys in
// `may_be_empty`.
status read_entries(const ini_file& file, const ini_section& section, const std::map<std::string, setter>& setters,
                    const std::set<std::string>& may_be_empty = {});

// An integer in [min, max].
setter integer(const ini_file& file, int& field, int min, int max = any_int);
// The text as written.
setter text(std::string& field);
// A positive integer count of the duration's unit.
template <class duration>
setter positive_duration(const ini_file& file, duration& field) {
  return [&file, &field](const ini_entry& e) -> status {
    auto v = integer_value(file, e, 1, any_int);
    if (!v) return v.err();
    field = duration(*v);
    return ok();
  };
}

}  // namespace troupe
