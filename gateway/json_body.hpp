#pragma once
// A request body read as JSON, with the limits every endpoint shares, and the checked
// reads its parsers use: nothing here throws, whatever the client sent.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "gateway/api_error.hpp"

namespace troupe {

// Containers nested deeper than this are refused while the body is parsed, before the
// document is built: copying, converting and destroying a document recurse per level.
inline constexpr int max_json_depth = 64;

// The body as a JSON object; a 400 when it is not JSON, not an object or nested too deep.
result<nlohmann::ordered_json, api_error> parse_json_object(std::string_view body);

// An integer that fits int64_t exactly; none for any other value (a float, a string, or
// an unsigned integer above INT64_MAX).
std::optional<int64_t> exact_integer(const nlohmann::ordered_json& v);

// Token ids: a list of integers, each in [0, 2^31). An error names `param`.
result<std::vector<int>, api_error> token_ids(const nlohmann::ordered_json& v, const std::string& param);

// object[key] when it is a string (or a boolean), else `fallback`: nlohmann's value()
// throws when the member has another type.
std::string string_field(const nlohmann::ordered_json& object, const char* key, const std::string& fallback = {});
bool bool_field(const nlohmann::ordered_json& object, const char* key, bool fallback);

// A list of at most `limit` entries; an error naming `param` past it.
std::optional<api_error> check_count(size_t count, size_t limit, const std::string& param, const char* what);

}  // namespace troupe
