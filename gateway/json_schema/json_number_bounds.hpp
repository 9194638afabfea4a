#pragma once
// The JSON numbers a schema's bounds allow (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, multipleOf), as an automaton over the digits the grammar writes:
// compact JSON numbers without exponent, at most 16 digits before the point and 16 after.
// Bounds are compared as the decimals they are written as, so 0.1 means one tenth, as a
// validator parsing both sides to doubles sees it; multipleOf is any positive decimal
// (0.01, 5, 2.5), whose automaton tracks the remainder.
#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "text/grammar/byte_automaton.hpp"

namespace troupe {

// Whether the schema has a keyword bounded_number_automaton reads.
bool has_number_bounds(const nlohmann::ordered_json& schema);

// The numbers (only integers with `integer`) the schema's bounds allow; an error names the
// keyword ("minimum above maximum", "multipleOf that is not a positive number", ...).
result<byte_automaton> bounded_number_automaton(const nlohmann::ordered_json& schema, bool integer);

}  // namespace troupe
