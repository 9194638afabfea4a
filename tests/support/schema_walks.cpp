// For tests/gateway/test_schema_walks.mjs, which checks troupe's grammars against
// independent references (ajv with ajv-formats; V8's RegExp). Reads JSON lines on stdin
// and answers one JSON line each:
//   schema_walks walks N: {"schema": S, "strict": B} -> {"texts": [...]}, N random walks
//     through the grammar's token mask over a byte vocabulary, or {"error": MESSAGE}.
//     A walk whose mask disagrees with what the matcher takes, or that meets a dead end,
//     is {"defect": ...}.
//   schema_walks match: {"pattern": P, "texts": [...]} -> {"matches": [...]} (whether the
//     pattern's automaton accepts each text), or {"error": MESSAGE}.
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/json_schema/json_schema_grammar.hpp"
#include "text/grammar/grammar_matcher.hpp"
#include "text/grammar/regex_automaton.hpp"

using namespace troupe;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::string> byte_vocabulary() {
  std::vector<std::string> v;
  for (int c = 0; c < 256; ++c) v.push_back(std::string(1, char(c)));
  for (const char* t : {"\": ", ", \"", "é", "中", "\\n", "\\u00e9", "😀", "12", "-0.5", "2024-", "T12:", "@", "://",
                        "00", "true", "null", "}", "]"})
    v.push_back(t);
  return v;
}

json walks(const json& request, int count, const std::vector<std::string>& vocabulary, const token_trie& trie) {
  auto g = json_schema_grammar(request["schema"], request.value("strict", true));
  if (!g) return json{{"error", g.err().message}};
  auto compiled = compiled_grammar::compile(*g);
  if (!compiled) return json{{"error", compiled.err().message}};
  auto shared = std::make_shared<const compiled_grammar>(std::move(compiled).value());
  json texts = json::array();
  std::vector<uint64_t> mask;
  for (int seed = 1; seed <= count; ++seed) {
    std::mt19937 gen{uint32_t(seed)};
    grammar_matcher m(shared);
    std::string text;
    bool finished = false;
    for (int step = 0; step < 4000 && !finished; ++step) {
      m.allowed_tokens(trie, mask);
      std::vector<int> allowed;
      for (int id = 0; id < trie.vocab_size(); ++id) {
        const bool in_mask = (mask[size_t(id) / 64] >> (id % 64)) & 1;
        if (in_mask) allowed.push_back(id);
        if (seed <= 2) {
          auto copy = m;
          if (in_mask != copy.advance(vocabulary[size_t(id)]))
            return json{
                {"defect", "the mask and advance disagree on '" + vocabulary[size_t(id)] + "' after '" + text + "'"}};
        }
      }
      if (m.accepts_end() && (allowed.empty() || gen() % 3 == 0)) {
        finished = true;
        break;
      }
      if (allowed.empty()) return json{{"defect", "a dead end after '" + text + "'"}};
      const std::string& token = vocabulary[size_t(allowed[gen() % allowed.size()])];
      m.advance(token);
      text += token;
    }
    if (finished) texts.push_back(text);
  }
  return json{{"texts", texts}};
}

json matches(const json& request) {
  auto a = regex_automaton(request["pattern"].get<std::string>());
  if (!a) return json{{"error", a.err().message}};
  json out = json::array();
  for (auto& t : request["texts"]) out.push_back(a->matches(t.get<std::string>()));
  return json{{"matches", out}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int count = argc > 2 ? std::stoi(argv[2]) : 20;
  if (mode != "walks" && mode != "match") {
    std::fprintf(stderr, "usage: schema_walks walks N | schema_walks match  (JSON lines on stdin)\n");
    return 2;
  }
  const auto vocabulary = byte_vocabulary();
  const token_trie trie(vocabulary);
  std::string line;
  while (std::getline(std::cin, line)) {
    const json request = json::parse(line, nullptr, false);
    if (request.is_discarded()) return 2;
    json answer = mode == "walks" ? walks(request, count, vocabulary, trie) : matches(request);
    std::cout << answer.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
  }
  return 0;
}
