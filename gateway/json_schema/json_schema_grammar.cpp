#include "gateway/json_schema/json_schema_grammar.hpp"

#include <cstdio>
#include <mutex>
#include <set>

#include "gateway/json_schema/json_schema_limits.hpp"
#include "text/grammar/grammar_builder.hpp"

namespace troupe {

using json = nlohmann::ordered_json;

namespace {

// Each keyword a schema without strict leaves out is logged the first time only: clients
// send the same schemas with every request. Past a bound, no more are named, so that
// made-up keywords can neither fill the log nor grow the set.
void log_ignored(const std::set<std::string>& keywords) {
  constexpr size_t max_named = 256;
  static std::mutex mutex;
  static std::set<std::string> logged;
  static bool full = false;
  std::lock_guard lock(mutex);
  for (auto& k : keywords) {
    if (full || logged.contains(k)) continue;
    if (logged.size() == max_named) {
      std::fprintf(stderr,
                   "troupe: %zu JSON Schema keywords were left out of schemas that are not strict; no more "
                   "are named\n",
                   max_named);
      full = true;
      return;
    }
    logged.insert(k);
    std::fprintf(stderr,
                 "troupe: JSON Schema keyword '%.100s' is not enforced where a schema is not strict; it is "
                 "left out\n",
                 k.c_str());
  }
}

}  // namespace

grammar json_object_grammar() {
  grammar_builder b;
  json_rules rules(b);
  return b.finish(rules.object(rules.value()));
}

result<grammar> json_schema_grammar(const json& schema, bool strict) {
  if (auto sized = check_schema_size(schema); !sized) return sized.err();
  grammar_builder b;
  json_rules rules(b);
  try {
    schema_translator translator(rules, schema, strict);
    auto root = translator.value(schema, "#");
    log_ignored(translator.ignored());
    return b.finish(root);
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
    if (auto sized = check_schema_size(tool.parameters); !sized)
      return error{"tool '" + tool.name + "': " + sized.err().message};
    try {
      grammar_sequence arguments = rules.object(rules.value());
      if (!tool.parameters.is_null()) {
        schema_translator translator(rules, tool.parameters, tool.strict);
        arguments = translator.value(tool.parameters, "#");
        log_ignored(translator.ignored());
      }
      calls.push_back(join({b.literal(json(tool.name).dump() + ", \"arguments\": "), arguments}));
    } catch (const schema_error& e) {
      return error{"tool '" + tool.name + "': " + e.message};
    }
  }
  auto call =
      b.rule({join({b.literal("<tool_call>\n{\"name\": "), b.rule(std::move(calls)), b.literal("}\n</tool_call>")})});
  if (!several) return b.finish(call);
  return b.finish(join({call, b.repeated(join({b.literal("\n"), call}))}));
}

}  // namespace troupe
