// libFuzzer: a JSON Schema pattern to an automaton (tests/fuzz/README.md). A pattern is
// compiled or refused with a message within the automaton limits; a compiled one accepts
// the same strings whether built alone or intersected with itself, and is trim: every
// state it keeps can still reach an accepting one.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.hpp"
#include "text/grammar/regex_automaton.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  const std::string_view pattern(reinterpret_cast<const char*>(data), size);
  auto a = regex_automaton(pattern);
  if (!a) {
    TROUPE_CHECK(!a.err().message.empty(), "a refused pattern without a message");
    return 0;
  }
  TROUPE_CHECK(!a->empty() && a->size() <= max_automaton_states, "an automaton past its limit");
  TROUPE_CHECK(a->trimmed().size() == a->size(), "an automaton that is not trim");
  auto both = intersect(*a, *a);
  TROUPE_CHECK(both.ok(), "an automaton that cannot meet itself");
  for (std::string_view probe : {std::string_view(""), pattern, std::string_view("a0_ Z\xc3\xa9")})
    TROUPE_CHECK(a->matches(probe) == both->matches(probe), "an intersection that changes the language");
  return 0;
}
