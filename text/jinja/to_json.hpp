#pragma once
// The `tojson` filter as transformers defines it: Python's json.dumps with ensure_ascii
// off by default, separators ", " and ": " (or "," and ": " when indenting), and keys in
// insertion order unless sort_keys.
#include <optional>
#include <string>

#include "base/result.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

struct json_options {
  bool ensure_ascii = false;
  std::optional<int> indent;
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};

// Fails for what JSON cannot hold: undefined, namespaces, callables.
result<std::string> to_json(const value& v, const json_options& options = {});

}  // namespace troupe::jinja
