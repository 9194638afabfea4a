#pragma once
// The values a chat template works on: JSON-like data (none, booleans, numbers, strings,
// arrays, objects whose keys keep their insertion order) plus `undefined`, which Jinja
// keeps distinct from none. The gateway builds them from a request; the renderer adds two
// kinds of its own (namespaces and callables) that only exist while a template renders.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::jinja {

class value;
class object;
using array = std::vector<value>;
struct namespace_state;
struct callable;

class value {
 public:
  enum class kind { undefined, none, boolean, integer, floating, string, array, object, name_space, callable };

  value() = default;  // undefined
  value(std::nullptr_t) : v_(nullptr) {}
  value(bool b) : v_(b) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) value(T i) : v_(static_cast<std::int64_t>(i)) {}
  value(double d) : v_(d) {}
  value(std::string s) : v_(std::move(s)) {}
  value(std::string_view s) : v_(std::string(s)) {}
  value(const char* s) : v_(std::string(s)) {}
  value(array a);
  value(object o);
  value(std::shared_ptr<namespace_state> ns) : v_(std::move(ns)) {}
  value(std::shared_ptr<const callable> fn) : v_(std::move(fn)) {}

  kind type() const { return static_cast<kind>(v_.index()); }
  bool is_undefined() const { return type() == kind::undefined; }
  bool is_none() const { return type() == kind::none; }
  bool is_bool() const { return type() == kind::boolean; }
  bool is_int() const { return type() == kind::integer; }
  bool is_double() const { return type() == kind::floating; }
  bool is_string() const { return type() == kind::string; }
  bool is_array() const { return type() == kind::array; }
  bool is_object() const { return type() == kind::object; }

  bool as_bool() const { return std::get<bool>(v_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(v_); }
  double as_double() const { return std::get<double>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const array& as_array() const { return *std::get<std::shared_ptr<const array>>(v_); }
  const object& as_object() const { return *std::get<std::shared_ptr<const object>>(v_); }
  namespace_state& as_namespace() const { return *std::get<std::shared_ptr<namespace_state>>(v_); }
  const callable& as_callable() const { return *std::get<std::shared_ptr<const callable>>(v_); }

 private:
  // Containers are shared, never mutated: templates cannot change the data they are given.
  std::variant<std::monostate, std::nullptr_t, bool, std::int64_t, double, std::string, std::shared_ptr<const array>,
               std::shared_ptr<const object>, std::shared_ptr<namespace_state>, std::shared_ptr<const callable>>
      v_;
};

// A JSON object: keys in insertion order, as Python dicts (and so json.dumps) keep them.
class object {
 public:
  using entry = std::pair<std::string, value>;

  object() = default;
  object(std::initializer_list<entry> entries);

  // Sets `key`, in place when it is present, else at the end.
  void set(std::string key, value v);
  const value* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::vector<entry> entries_;
};

// What `namespace(...)` returns: the one mutable value (`{% set ns.x = ... %}`).
struct namespace_state {
  object attributes;
};

inline value::value(array a) : v_(std::make_shared<const array>(std::move(a))) {}
inline value::value(object o) : v_(std::make_shared<const object>(std::move(o))) {}

}  // namespace troupe::jinja
