#pragma once
// Ids clients see (tool calls, responses, messages): a prefix and random letters and
// digits, unguessable and unique enough to key stores by.
#include <string>
#include <string_view>

namespace troupe {

std::string random_id(std::string_view prefix, int length = 24);

}  // namespace troupe
