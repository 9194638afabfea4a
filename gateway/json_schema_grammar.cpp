#include "gateway/json_schema_grammar.hpp"

#include "gateway/json_schema_limits.hpp"
#include "model/grammar/grammar_builder.hpp"

namespace troupe {

using json = nlohmann::ordered_json;

grammar json_object_grammar() {
  grammar_builder b;
  json_rules rules(b);
  return b.finish(rules.object(rules.value()));
}

result<grammar> json_schema_grammar(const json& schema) {
  if (auto sized = check_schema_size(schema); !sized) return sized.err();
  grammar_builder b;
  json_rules rules(b);
  try {
    return b.finish(schema_translator(rules, schema).value(schema, "#"));
  } catch (const schema_error& e) {
    return error{e.message};
  }
}

result<grammar> tool_call_grammar(const std::vector<tool_schema>& tools, bool several) {
  if (tools.empty()) return error{"no tools to call"};
  grammar_builder b;
  json_rules rules(b);
  std::vector<grammar_sequence> calls;
  for (auto& tool : tools) {
    if (auto sized = check_schema_size(tool.parameters); !sized) return error{"tool '" + tool.name + "': " + sized.err().message};
    try {
      auto arguments = tool.parameters.is_null()
                           ? rules.object(rules.value())
                           : schema_translator(rules, tool.parameters).value(tool.parameters, "#");
      calls.push_back(join({b.literal(json(tool.name).dump() + ", \"arguments\": "), arguments}));
    } catch (const schema_error& e) {
      return error{"tool '" + tool.name + "': " + e.message};
    }
  }
  auto call = b.rule({join({b.literal("<tool_call>\n{\"name\": "), b.rule(std::move(calls)), b.literal("}\n</tool_call>")})});
  if (!several) return b.finish(call);
  return b.finish(join({call, b.repeated(join({b.literal("\n"), call}))}));
}

}  // namespace troupe
