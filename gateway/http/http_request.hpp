#pragma once
// One HTTP request as the gateway sees it: parsed, whole, body included.
#include <string>
#include <string_view>
#include <vector>

namespace troupe::http {

struct header {
  std::string name, value;
};

struct request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query
  std::string query;   // after '?', may be empty
  std::vector<header> headers;
  std::string body;
  // Case-insensitive lookup; empty when absent.
  std::string_view header_value(std::string_view name) const;
};

// ASCII case-insensitive comparison, as header names and tokens are compared.
bool equals_ignoring_case(std::string_view a, std::string_view b);

}  // namespace troupe::http
