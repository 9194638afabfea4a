// The grammar matcher on hand-written grammars: which bytes it takes, when it may end, that
// a rejected token changes nothing, that its token mask is exactly the tokens advance
// takes, that bad grammars are refused, that grammars survive msgpack and keep their
// language inside others.
#define BOOST_TEST_MODULE grammar_matcher
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/grammar_walk.hpp"
#include "text/grammar/counted_runs.hpp"
#include "text/grammar/grammar_builder.hpp"
#include "text/grammar/grammar_matcher.hpp"

using namespace troupe;
using test::matcher_of;

namespace {

// "ab" or "a" then any number of "c", then "!" optionally.
grammar ab_or_acs() {
  grammar_builder b;
  auto body = b.rule({b.literal("ab"), join({b.literal("a"), b.repeated(b.literal("c"))})});
  return b.finish(join({body, b.optional(b.literal("!"))}));
}

bool bit(const std::vector<uint64_t>& mask, int id) { return (mask[size_t(id) / 64] >> (id % 64)) & 1; }

std::vector<std::string> small_vocabulary() {
  std::vector<std::string> v;
  for (int c = 0; c < 256; ++c) v.push_back(std::string(1, char(c)));
  for (const char* t : {"ab", "abc", "ac", "acc", "cc", "cccc", "c!", "a!", "ab!", "!", "", "ccb", "ac"})
    v.push_back(t);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(follows_bytes_and_knows_when_it_may_end) {
  auto m = matcher_of(ab_or_acs());
  BOOST_TEST(!m.accepts_end());
  BOOST_TEST(m.advance("a"));
  BOOST_TEST(m.accepts_end());  // "a" with no c's
  BOOST_TEST(m.advance("ccc"));
  BOOST_TEST(m.accepts_end());
  BOOST_TEST(!m.advance("b"));  // "b" only right after the first "a"
  BOOST_TEST(m.advance("c!"));
  BOOST_TEST(m.accepts_end());
  BOOST_TEST(!m.can_continue());
  BOOST_TEST(!m.advance("!"));
}

BOOST_AUTO_TEST_CASE(a_rejected_token_leaves_the_state_as_it_was) {
  auto m = matcher_of(ab_or_acs());
  BOOST_TEST(m.advance("a"));
  BOOST_TEST(!m.advance("cb"));  // its first byte alone would be taken
  BOOST_TEST(m.advance("b"));
  BOOST_TEST(m.accepts_end());
  BOOST_TEST(!m.advance("c"));
}

BOOST_AUTO_TEST_CASE(the_mask_holds_exactly_the_tokens_advance_takes) {
  auto vocabulary = small_vocabulary();
  token_trie trie(vocabulary);
  auto m = matcher_of(ab_or_acs());
  std::vector<uint64_t> mask;
  for (std::string step : {"", "a", "c", "cc"}) {
    BOOST_REQUIRE(m.advance(step));
    m.allowed_tokens(trie, mask);
    int allowed = 0;
    for (int id = 0; id < int(vocabulary.size()); ++id) {
      auto copy = m;
      bool takes = !vocabulary[size_t(id)].empty() && copy.advance(vocabulary[size_t(id)]);
      BOOST_TEST(bit(mask, id) == takes, "after '" << step << "', token '" << vocabulary[size_t(id)] << "'");
      allowed += takes;
    }
    BOOST_TEST(allowed > 0);
  }
  // Both tokens spelled "ac" are allowed at the start; the empty token never is.
  auto fresh = matcher_of(ab_or_acs());
  fresh.allowed_tokens(trie, mask);
  BOOST_TEST(bit(mask, 256 + 2));
  BOOST_TEST(bit(mask, 256 + 12));
  BOOST_TEST(!bit(mask, 256 + 10));
  BOOST_TEST(!bit(mask, 'b'));
}

// '"', 2 to 6 characters (a letter, an escape or a multi-byte one), '"', then "!".
grammar quoted_run(grammar_builder& b) {
  auto character =
      b.rule({b.bytes({{'a', 'z'}}), join({b.literal("\\"), b.bytes({{'n', 'n'}, {'t', 't'}})}), b.multibyte_utf8()});
  return b.finish(join({b.literal("\""), b.repeated(character, 2, 6), b.literal("\"!")}));
}

BOOST_AUTO_TEST_CASE(bounded_repetitions_are_found_as_counted_runs) {
  grammar_builder b;
  grammar g = quoted_run(b);
  auto runs = find_counted_runs(g, std::vector<bool>(g.rules.size(), false));
  std::vector<std::pair<int32_t, int32_t>> found;  // items, required
  for (auto& run : runs) {
    if (run) found.emplace_back(run->items, run->required);
  }
  std::sort(found.begin(), found.end());
  // From the first step, 6 items at most and 2 at least; from the last, 1 and 0.
  BOOST_TEST((found == std::vector<std::pair<int32_t, int32_t>>{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 1}, {6, 2}}));
}

// The mask along counted runs (each step's classes filtered from one counting walk of a
// twin run) is what advance takes, from character boundaries and from inside characters.
BOOST_AUTO_TEST_CASE(the_mask_along_a_counted_run_is_what_advance_takes) {
  std::vector<std::string> vocabulary;
  for (int c = 0; c < 256; ++c) vocabulary.push_back(std::string(1, char(c)));
  for (const char* t : {"ab",
                        "abc",
                        "abcdef",
                        "abcdefg",
                        "\\n",
                        "\\",
                        "n",
                        "nt",
                        "a\\",
                        "a\"",
                        "ab\"",
                        "ab\"!",
                        "abcde\"!",
                        "\"!",
                        "\xc3\xa9",
                        "\xc3",
                        "\xa9"
                        "a",
                        "a\xc3",
                        "\xa9\"!",
                        "\"",
                        "!",
                        "\"ab"})
    vocabulary.push_back(t);
  token_trie trie(vocabulary);
  grammar_builder b;
  auto compiled = std::make_shared<const compiled_grammar>(compiled_grammar::compile(quoted_run(b)).value());
  int checked = 0;
  for (std::string text : {"\"", "\"a", "\"ab", "\"a\\", "\"abc", "\"a\xc3", "\"abcd", "\"abcd\\", "\"abcde",
                           "\"abcdef", "\"\xc3\xa9\\n", "\"abcdef\""}) {
    grammar_matcher m(compiled);
    BOOST_REQUIRE_MESSAGE(m.advance(text), text);
    std::vector<uint64_t> mask, walked;
    m.allowed_tokens(trie, mask);
    m.allowed_tokens_by_trie_walk(trie, walked);
    BOOST_TEST((mask == walked), "after '" << text << "'");
    for (int id = 0; id < int(vocabulary.size()); ++id) {
      auto copy = m;
      const bool takes = copy.advance(vocabulary[size_t(id)]);
      BOOST_TEST(bit(mask, id) == takes, "after '" << text << "', token '" << vocabulary[size_t(id)] << "'");
      checked += takes;
    }
  }
  BOOST_TEST(checked > 100);
}

BOOST_AUTO_TEST_CASE(one_of_takes_exactly_its_strings) {
  const std::vector<std::string> texts = {"apple", "app", "apricot", "banana", "band", "", "app"};
  grammar_builder b;
  auto compiled =
      std::make_shared<const compiled_grammar>(compiled_grammar::compile(b.finish(b.one_of(texts))).value());
  for (std::string text : {"apple", "app", "apricot", "banana", "band", ""}) {
    grammar_matcher m(compiled);
    BOOST_TEST((m.advance(text) && m.accepts_end()), text);
  }
  for (std::string text : {"ap", "apples", "bandana", "b", "c", "appl"}) {
    grammar_matcher m(compiled);
    BOOST_TEST(!(m.advance(text) && m.accepts_end()), text);
  }
  auto vocabulary = small_vocabulary();
  for (const char* t : {"app", "le", "pri", "ban", "ana", "d", "apple"}) vocabulary.push_back(t);
  token_trie trie(vocabulary);
  for (std::string text : {"", "a", "ap", "app", "b", "ban", "bana"}) {
    grammar_matcher m(compiled);
    BOOST_REQUIRE(m.advance(text));
    std::vector<uint64_t> mask;
    m.allowed_tokens(trie, mask);
    for (int id = 0; id < int(vocabulary.size()); ++id) {
      auto copy = m;
      const bool takes = !vocabulary[size_t(id)].empty() && copy.advance(vocabulary[size_t(id)]);
      BOOST_TEST(bit(mask, id) == takes, "after '" << text << "', token '" << vocabulary[size_t(id)] << "'");
    }
  }
}

BOOST_AUTO_TEST_CASE(multibyte_utf8_takes_well_formed_characters_only) {
  grammar_builder b;
  auto m0 = matcher_of(b.finish(b.multibyte_utf8()));
  for (std::string good : {"é", "中", "😀", "\xed\x9f\xbf"}) {
    auto m = m0;
    BOOST_TEST((m.advance(good) && m.accepts_end()), good);
  }
  for (std::string bad : {"\xc0\xaf", "\xed\xa0\x80", "\xe0\x80\x80", "\xf4\x90\x80\x80", "\xff", "a"}) {
    auto m = m0;
    BOOST_TEST(!m.advance(bad));
  }
}

BOOST_AUTO_TEST_CASE(left_recursion_and_dangling_references_are_refused) {
  grammar_builder b;
  int32_t list = b.declare();
  b.define(list,
           {join({b.optional(b.literal(" ")), grammar_builder::reference(list), b.literal("x")}), b.literal("x")});
  auto compiled = compiled_grammar::compile(b.finish(grammar_builder::reference(list)));
  BOOST_REQUIRE(!compiled.ok());
  BOOST_TEST(compiled.err().message.find("left recursion") != std::string::npos);

  grammar dangling;
  dangling.rules.push_back(grammar_rule{{grammar_alternative{{grammar_symbol{true, 7}}}}});
  auto refused = compiled_grammar::compile(dangling);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.err().message.find("missing rule 7") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_grammar_survives_msgpack) {
  grammar g = ab_or_acs();
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, g);
  grammar back = msgpack::unpack(buffer.data(), buffer.size())->as<grammar>();
  BOOST_TEST(back.root == g.root);
  BOOST_TEST(back.byte_sets == g.byte_sets);
  auto m = matcher_of(back);
  BOOST_TEST(m.advance("acc!"));
  BOOST_TEST(m.accepts_end());
}

BOOST_AUTO_TEST_CASE(an_included_grammar_keeps_its_language_inside_another) {
  grammar_builder b;
  auto inner = b.include(ab_or_acs());
  auto m = matcher_of(b.finish(join({b.literal("("), inner, b.literal(")"), b.include(ab_or_acs())})));
  auto copy = m;
  BOOST_TEST(m.advance("(acc!)ab"));
  BOOST_TEST(m.accepts_end());
  BOOST_TEST(!copy.advance("(b"));
}
