#include "text/jinja/value.hpp"

namespace troupe::jinja {

object::object(std::initializer_list<entry> entries) {
  for (const entry& e : entries) set(e.first, e.second);
}

void object::set(std::string key, value v) {
  for (entry& e : entries_) {
    if (e.first == key) {
      e.second = std::move(v);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(v));
}

const value* object::find(std::string_view key) const {
  for (const entry& e : entries_)
    if (e.first == key) return &e.second;
  return nullptr;
}

}  // namespace troupe::jinja
