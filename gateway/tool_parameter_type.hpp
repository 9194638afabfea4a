#pragma once
// The JSON type a tool parameter's schema declares: what an xml tool call's value is read
// as (tool_call_markup.hpp), and so what a forced one must write it as.
#include <string>

#include <nlohmann/json.hpp>

namespace troupe {

// "type" as a string, or the first that is not "null" of a list of types; empty when the
// schema gives none (anyOf, $ref, enum alone, ...).
std::string declared_parameter_type(const nlohmann::ordered_json& schema);

}  // namespace troupe
