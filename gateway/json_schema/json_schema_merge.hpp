#pragma once
// allOf folded into one schema, as pydantic and zod write model inheritance and
// intersections: the parts' properties united (a property in several parts gets the allOf
// of its schemas), required names united, types intersected, the tighter of each bound,
// enums intersected, and a part with additionalProperties false closing the object to its
// own properties. Parts that give one keyword different values otherwise are refused,
// naming it, since the grammar cannot hold both. Throws schema_error (json_schema_rules.hpp).
#include <string>

#include <nlohmann/json.hpp>

namespace troupe {

// The schema (holding allOf) as one schema without it; local $refs of the parts resolved
// against `document`.
nlohmann::ordered_json merge_all_of(const nlohmann::ordered_json& schema, const nlohmann::ordered_json& document,
                                    const std::string& where);

}  // namespace troupe
