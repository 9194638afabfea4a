#include "gateway/http/http_request.hpp"

#include <algorithm>

namespace troupe::http {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

}  // namespace

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view request::header_value(std::string_view name) const {
  for (const header& h : headers)
    if (equals_ignoring_case(h.name, name)) return h.value;
  return {};
}

}  // namespace troupe::http
