// What the sampling stage keeps for constrained decoding: the vocabulary taken from a
// tokenizer, the cache of compiled grammars, and one sequence's mask as its output grows.
#define BOOST_TEST_MODULE constrained_output
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>
#include <vector>

#include "tests/support/qwen3_tokenizer.hpp"
#include "text/grammar/constrained_output.hpp"
#include "text/grammar/grammar_builder.hpp"
#include "text/grammar/grammar_cache.hpp"

using namespace troupe;

namespace {

// "yes" or "no", then "!" optionally.
grammar yes_or_no() {
  grammar_builder b;
  return b.finish(join({b.rule({b.literal("yes"), b.literal("no")}), b.optional(b.literal("!"))}));
}

// Ids 0-255: the bytes; then "ye", "yes", "no!", "s!", and 262: a special token.
std::shared_ptr<const token_vocabulary> small_vocabulary() {
  std::vector<std::string> v;
  for (int c = 0; c < 256; ++c) v.push_back(std::string(1, char(c)));
  for (const char* t : {"ye", "yes", "no!", "s!", "", "!!"}) v.push_back(t);
  return std::make_shared<const token_vocabulary>(std::move(v));
}
constexpr int end_token = 260;

// An enum of 2000 strings: milliseconds to compile, so concurrent compiles overlap.
grammar long_enum() {
  std::vector<std::string> values;
  for (int i = 0; i < 2000; ++i) values.push_back("value number " + std::to_string(i * 7919));
  grammar_builder b;
  return b.finish(b.one_of(std::move(values)));
}

std::vector<int> allowed_ids(constrained_output& c) {
  const auto& mask = c.allowed();
  std::vector<int> ids;
  for (int id = 0; id < int(mask.size()) * 64; ++id)
    if ((mask[size_t(id) / 64] >> (id % 64)) & 1) ids.push_back(id);
  return ids;
}

constrained_output yes_or_no_output() {
  grammar_cache cache(4, size_t{1} << 30);
  return constrained_output(cache.get(yes_or_no()).value(), {end_token}, small_vocabulary());
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_mask_follows_the_grammar_and_adds_the_end_tokens_once_whole) {
  auto c = yes_or_no_output();
  BOOST_TEST(allowed_ids(c) == (std::vector<int>{'n', 'y', 256, 257, 258}));  // n, y, ye, yes, no!
  BOOST_TEST(c.advance(256));                                                 // "ye"
  BOOST_TEST(allowed_ids(c) == (std::vector<int>{'s', 259}));                 // s, s!
  BOOST_TEST(c.advance('s'));
  BOOST_TEST(allowed_ids(c) == (std::vector<int>{'!', end_token}));  // whole: it may end here
}

BOOST_AUTO_TEST_CASE(only_the_end_tokens_once_nothing_can_follow) {
  auto c = yes_or_no_output();
  BOOST_TEST(c.advance(258));  // "no!"
  BOOST_TEST(allowed_ids(c) == (std::vector<int>{end_token}));
}

BOOST_AUTO_TEST_CASE(tokens_outside_the_grammar_and_special_ones_are_refused) {
  auto c = yes_or_no_output();
  BOOST_TEST(!c.advance('x'));
  BOOST_TEST(!c.advance(end_token));  // no bytes: a special token
  BOOST_TEST(!c.advance(261));        // "!!" cannot start
  BOOST_TEST(!c.advance(100000));     // outside the vocabulary
  BOOST_TEST(c.advance('y'));         // and the refusals changed nothing
  BOOST_TEST(!c.advance(258));
  BOOST_TEST(c.advance(259) == false);  // "s!" needs the "e" first
}

BOOST_AUTO_TEST_CASE(equal_grammars_share_one_compiled_grammar_and_the_cache_is_bounded) {
  grammar_cache cache(2, size_t{1} << 30);
  auto a = cache.get(yes_or_no()).value();
  BOOST_TEST(cache.get(yes_or_no()).value() == a);
  grammar_builder b;
  auto other = b.finish(b.literal("maybe"));
  auto o = cache.get(other).value();
  BOOST_TEST(o != a);
  BOOST_TEST(cache.get(yes_or_no()).value() == a);  // a is now the most recent
  grammar_builder c;
  auto third = cache.get(c.finish(c.literal("third"))).value();
  BOOST_TEST(cache.size() == 2u);
  BOOST_TEST(cache.get(yes_or_no()).value() == a);  // kept; "maybe" went
  BOOST_TEST(cache.get(other).value() != o);
}

BOOST_AUTO_TEST_CASE(threads_compiling_the_same_grammar_at_once_get_one_compiled_grammar) {
  grammar_cache cache(8, size_t{1} << 30);
  std::vector<std::shared_ptr<const compiled_grammar>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = cache.get(long_enum()).value(); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) BOOST_TEST(g == got.front());
  BOOST_TEST(cache.size() == 1u);
  BOOST_TEST(cache.get(long_enum()).value() == got.front());
}

// A long literal meets a context per byte: each keeps a bitset of the vocabulary.
grammar long_literal(char c) {
  grammar_builder b;
  return b.finish(b.literal(std::string(200, c)));
}

// The masks of `g` along its one sentence, by byte.
std::vector<std::vector<int>> masks_along(std::shared_ptr<const compiled_grammar> g, char c) {
  constrained_output out(std::move(g), {end_token}, small_vocabulary());
  std::vector<std::vector<int>> masks;
  for (int i = 0; i < 200; ++i) {
    masks.push_back(allowed_ids(out));
    BOOST_REQUIRE(out.advance(c));
  }
  masks.push_back(allowed_ids(out));
  return masks;
}

BOOST_AUTO_TEST_CASE(token_classes_keep_within_the_budget_and_the_masks_stay_right) {
  const auto unbounded = std::make_shared<const compiled_grammar>(compiled_grammar::compile(long_literal('a')).value());
  const auto expected = masks_along(unbounded, 'a');
  const size_t all = unbounded->classes_bytes();
  BOOST_TEST(all > 0u);

  const auto budget = std::make_shared<classes_budget>(all / 4);
  const auto bounded =
      std::make_shared<const compiled_grammar>(compiled_grammar::compile(long_literal('a'), budget).value());
  BOOST_TEST(masks_along(bounded, 'a') == expected);  // the classes it could not keep, worked out again
  BOOST_TEST(bounded->classes_bytes() <= all / 4);
  BOOST_TEST(bounded->classes_bytes() > all / 8, "it kept what fitted");
  BOOST_TEST(budget->used() == bounded->classes_bytes());
  const size_t kept = bounded->classes_bytes();
  BOOST_TEST(masks_along(bounded, 'a') == expected);
  BOOST_TEST(bounded->classes_bytes() == kept);
}

BOOST_AUTO_TEST_CASE(a_new_grammar_drops_old_ones_while_their_classes_take_over_half_the_budget) {
  const size_t one = compiled_grammar::compile(long_literal('a')).value().classes_bytes();  // none yet
  BOOST_TEST(one == 0u);
  const auto probe = std::make_shared<const compiled_grammar>(compiled_grammar::compile(long_literal('a')).value());
  masks_along(probe, 'a');
  const size_t per_grammar = probe->classes_bytes();

  grammar_cache cache(64, per_grammar * 3 / 2);  // one grammar's classes take over half
  masks_along(cache.get(long_literal('a')).value(), 'a');
  BOOST_TEST(cache.classes_bytes() == per_grammar);
  masks_along(cache.get(long_literal('b')).value(), 'b');
  BOOST_TEST(cache.size() == 1u, "over half the budget taken: the first grammar went");
  BOOST_TEST(cache.classes_bytes() == per_grammar, "and gave its classes' bytes back");
  masks_along(cache.get(long_literal('c')).value(), 'c');
  BOOST_TEST(cache.size() == 1u);
  BOOST_TEST(cache.classes_bytes() == per_grammar);
  {
    auto held = cache.get(long_literal('c')).value();  // a sequence still decodes with it
    BOOST_TEST(cache.get(long_literal('d')).ok());
    BOOST_TEST(cache.classes_bytes() == per_grammar, "held: its classes stay until it is let go");
  }
  BOOST_TEST(cache.classes_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(a_grammar_that_does_not_compile_is_an_error) {
  grammar_cache cache(2, size_t{1} << 30);
  grammar g;  // rule 0 refers to itself first: left recursion
  g.rules.push_back({{{{grammar_symbol{true, 0}}}}});
  BOOST_TEST(!cache.get(g).ok());
  BOOST_TEST(cache.size() == 0u);
}

BOOST_AUTO_TEST_CASE(the_vocabulary_of_a_tokenizer_has_text_tokens_only) {
  const tokenizer& tok = test::qwen3_tokenizer();
  auto v = vocabulary_of(tok);
  BOOST_TEST(int(v->bytes.size()) == tok.vocab_size());
  BOOST_TEST(v->bytes[9707] == "Hello");
  BOOST_TEST(v->bytes[size_t(*tok.token_to_id("<tool_call>"))] == "<tool_call>");  // an added text token
  BOOST_TEST(v->bytes[size_t(*tok.token_to_id("<|im_end|>"))].empty());            // special: ends, never text
  BOOST_TEST(v->trie.vocab_size() == tok.vocab_size());
}
