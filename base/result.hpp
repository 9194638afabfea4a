#pragma once
// A value or an error (a message by default), for failures the caller must handle (bad
// input files, bad requests). C++20 has no std::expected; this is the small part we need.
#include <string>
#include <utility>
#include <variant>

#include "base/check.hpp"

namespace troupe {

struct error {
  std::string message;
};

template <class T, class E = error>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::move(value)) {}
  result(E e) : v_(std::move(e)) {}

  explicit operator bool() const { return v_.index() == 0; }
  bool ok() const { return v_.index() == 0; }

  T& value() & {
    TROUPE_CHECK(ok(), "result holds an error");
    return std::get<0>(v_);
  }
  // By value, so `for (auto x : f().value())` does not iterate a dead temporary.
  T value() && {
    TROUPE_CHECK(ok(), "result holds an error");
    return std::get<0>(std::move(v_));
  }
  const E& err() const {
    TROUPE_CHECK(!ok(), "result holds a value");
    return std::get<1>(v_);
  }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, E> v_;
};

struct ok_t {};
using status = result<ok_t>;
inline status ok() { return ok_t{}; }

}  // namespace troupe
