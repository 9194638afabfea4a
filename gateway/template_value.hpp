#pragma once
// Request JSON to the chat template's native values: objects keep their key order,
// integers stay integers, floats stay floats.
#include <nlohmann/json.hpp>

#include "text/jinja/value.hpp"

namespace troupe {

jinja::value to_template_value(const nlohmann::ordered_json& j);

}  // namespace troupe
