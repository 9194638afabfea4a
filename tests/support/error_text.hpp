#pragma once
// A result's error message for a test's failure message, or "" when it holds a value
// (Boost evaluates the message even when the check passes).
#include <string>

#include "base/result.hpp"

namespace troupe::test {

template <class T>
std::string error_text(const result<T>& r) {
  return r.ok() ? std::string() : r.err().message;
}

}  // namespace troupe::test
