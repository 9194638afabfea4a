#pragma once
// JSON pointers into a schema document ($ref "#/$defs/a"), resolved without exceptions.
#include <string_view>

#include <nlohmann/json.hpp>

namespace troupe {

// The value a JSON pointer's tokens ("a/b/0", with ~0 and ~1 escapes) name in `document`;
// null when it names none or is malformed. nlohmann's json_pointer throws on both.
const nlohmann::ordered_json* resolve_pointer(const nlohmann::ordered_json& document, std::string_view pointer);

// The schema a local $ref ("#/$defs/..." or "#/definitions/...") names; null for others.
const nlohmann::ordered_json* resolve_reference(const nlohmann::ordered_json& document, std::string_view ref);

}  // namespace troupe
