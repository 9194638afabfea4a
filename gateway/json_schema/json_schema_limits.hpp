#pragma once
// How big a JSON Schema a request may constrain output with: OpenAI's limits for
// structured outputs. A schema past one is refused (a 400) before it is compiled, whose
// cost and cached masks grow with it (a 30k-string enum took 2.3 GB).
#include <cstddef>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace troupe {

inline constexpr size_t max_schema_properties = 5000;      // object properties, in all
inline constexpr size_t max_schema_enum_values = 1000;     // enum values, in all
inline constexpr size_t max_schema_string_bytes = 120000;  // property names, enum and const strings

status check_schema_size(const nlohmann::ordered_json& schema);

}  // namespace troupe
