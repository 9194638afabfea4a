#include "gateway/json_schema/json_pointer.hpp"

#include <charconv>
#include <string>

namespace troupe {

using json = nlohmann::ordered_json;

const json* resolve_pointer(const json& document, std::string_view pointer) {
  const json* at = &document;
  while (true) {
    const size_t slash = pointer.find('/');
    const std::string_view part = pointer.substr(0, slash);
    std::string token;
    for (size_t i = 0; i < part.size(); ++i) {
      if (part[i] != '~') {
        token += part[i];
        continue;
      }
      if (i + 1 >= part.size() || (part[i + 1] != '0' && part[i + 1] != '1')) return nullptr;
      token += part[++i] == '0' ? '~' : '/';
    }
    if (at->is_object()) {
      auto it = at->find(token);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array()) {
      size_t index = 0;
      const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec != std::errc() || end != token.data() + token.size() || token.empty() || index >= at->size())
        return nullptr;
      at = &(*at)[index];
    } else {
      return nullptr;
    }
    if (slash == std::string_view::npos) return at;
    pointer.remove_prefix(slash + 1);
  }
}

const json* resolve_reference(const json& document, std::string_view ref) {
  if (!ref.starts_with("#/$defs/") && !ref.starts_with("#/definitions/")) return nullptr;
  return resolve_pointer(document, ref.substr(2));
}

}  // namespace troupe
