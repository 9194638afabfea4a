#pragma once
// A small JSON Schema whose outputs end within a few dozen tokens, a vocabulary for the
// golden fixtures' ids that can spell it, and the check that an output is one of its
// objects: what the engine tests constrain requests with.
#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "text/grammar/token_vocabulary.hpp"

namespace troupe::test {

// `size` ids as text: 0-255 the bytes, then JSON fragments and digit pairs; ids from
// `first_special` on are special and have none.
inline std::shared_ptr<const token_vocabulary> json_vocabulary(int size, int first_special) {
  std::vector<std::string> bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(std::string(1, char(c)));
  for (const char* f : {"{\"", "\":", "\": ", ", \"", "\",", "true", "false", "ok", "kind", "\"a\"", "}", "\"}"})
    bytes.push_back(f);
  while (int(bytes.size()) < first_special) bytes.push_back(std::to_string(bytes.size() % 100));
  bytes.resize(size_t(size));
  return std::make_shared<const token_vocabulary>(std::move(bytes));
}

// Bounded: every output ends well within 80 tokens.
inline nlohmann::json status_schema() {
  return nlohmann::json::parse(R"({"type": "object", "properties": {
    "ok": {"type": "boolean"}, "n": {"type": "integer"}, "kind": {"enum": ["a", "b", "c"]}},
    "required": ["ok", "n", "kind"], "additionalProperties": false})");
}

// Valid: the text of every token but the closing eos is a JSON object of status_schema.
inline void expect_status_object(const std::vector<int>& tokens, const token_vocabulary& v, int eos) {
  BOOST_REQUIRE(!tokens.empty());
  BOOST_TEST(tokens.back() == eos);
  std::string text;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) text += v.bytes[size_t(tokens[i])];
  BOOST_TEST_CONTEXT(text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    BOOST_REQUIRE(j.is_object());
    BOOST_TEST(j.size() == 3u);
    BOOST_TEST(j["ok"].is_boolean());
    BOOST_TEST(j["n"].is_number_integer());
    BOOST_TEST((j["kind"] == "a" || j["kind"] == "b" || j["kind"] == "c"));
  }
}

}  // namespace troupe::test
