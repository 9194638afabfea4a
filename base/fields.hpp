#pragma once
// Message structs list their fields once, with TROUPE_FIELDS(name, a, b, ...); msgpack
// (transport/ and anything written to the wire outside CAF) is derived from that list here,
// CAF's inspect (actor messages, local or remote) in actors/caf_fields.hpp.
#include <tuple>
#include <type_traits>

#include <msgpack.hpp>

#define TROUPE_FIELDS(type, ...)                     \
  static constexpr const char* message_name = #type; \
  auto fields() { return std::tie(__VA_ARGS__); }    \
  auto fields() const { return std::tie(__VA_ARGS__); }

namespace troupe {

template <class T>
concept has_fields = requires(T& x) {
  x.fields();
  T::message_name;
};

}  // namespace troupe

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
  namespace adaptor {

  template <troupe::has_fields T>
  struct pack<T> {
    template <class Stream>
    packer<Stream>& operator()(packer<Stream>& o, const T& v) const {
      std::apply([&](const auto&... m) { type::make_define_array(m...).msgpack_pack(o); }, v.fields());
      return o;
    }
  };

  template <troupe::has_fields T>
  struct convert<T> {
    const msgpack::object& operator()(const msgpack::object& o, T& v) const {
      std::apply([&](auto&... m) { type::make_define_array(m...).msgpack_unpack(o); }, v.fields());
      return o;
    }
  };

  }  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE
}  // namespace msgpack
