// libFuzzer: JSON Schema to grammar, for response_format and for forced tool calls in
// both markups, then the grammar's compilation (tests/fuzz/README.md). A schema is taken
// or refused with a message; nothing throws past the translators, crashes or hangs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.hpp"
#include "gateway/json_body.hpp"
#include "gateway/json_schema/json_schema_grammar.hpp"
#include "gateway/xml_tool_call_grammar.hpp"
#include "text/grammar/compiled_grammar.hpp"

namespace {

void check(troupe::result<troupe::grammar> g) {
  if (!g) {
    TROUPE_CHECK(!g.err().message.empty(), "a refused schema without a message");
    return;
  }
  if (auto compiled = troupe::compiled_grammar::compile(*g); !compiled)
    TROUPE_CHECK(!compiled.err().message.empty(), "a grammar refused without a message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  // The schema sits in an object, so that the body's limits (nesting depth) apply to it
  // as they do to a request's.
  const std::string body = "{\"s\":" + std::string(reinterpret_cast<const char*>(data), size) + "}";
  auto parsed = parse_json_object(body);
  if (!parsed) return 0;
  const auto& schema = (*parsed)["s"];
  check(json_schema_grammar(schema));
  check(json_schema_grammar(schema, false));
  const std::vector<tool_schema> tools{{"f", schema}};
  check(tool_call_grammar(tools, true));
  check(xml_tool_call_grammar(tools, false));
  return 0;
}
