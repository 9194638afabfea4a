#pragma once
// CAF's inspect for every struct that lists its fields with TROUPE_FIELDS (base/fields.hpp):
// actor messages, local or remote, carry them field by field. Here rather than in base/ so
// that only the actors depend on CAF.
#include <tuple>

#include <caf/meta/type_name.hpp>

#include "base/fields.hpp"

namespace troupe {

template <class Inspector, has_fields T>
typename Inspector::result_type inspect(Inspector& f, T& x) {
  return std::apply([&](auto&... m) { return f(caf::meta::type_name(T::message_name), m...); }, x.fields());
}

}  // namespace troupe
