// The last stage's grammar warmer: a grammar it readies is compiled into the engine's cache
// with the token classes of its first mask and of its strings' contexts gathered, so that
// the sequence's steps find both; one that does not compile is a `false`, and the warmer
// goes on.
#define BOOST_TEST_MODULE grammar_warmer
#include <boost/test/unit_test.hpp>

#include "actors/grammar_warmer.hpp"
#include "actors/message_types.hpp"
#include "gateway/json_schema/json_schema_grammar.hpp"
#include "tests/actors/status_object.hpp"

using namespace troupe;

BOOST_AUTO_TEST_CASE(readies_a_grammar_into_the_cache_with_its_first_mask) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  auto grammars = std::make_shared<grammar_cache>(8, size_t(64) << 20);
  auto warmer =
      system.spawn<caf::detached>(grammar_warmer, grammars, ready_vocabulary(test::json_vocabulary(384, 382)));
  caf::scoped_actor self{system};
  auto ready = [&](const grammar& g) {
    bool answer = false;
    self->request(warmer, std::chrono::seconds(30), grammar_atom::value, g)
        .receive([&](bool b) { answer = b; }, [&](const caf::error& e) { BOOST_FAIL(system.render(e)); });
    return answer;
  };
  const grammar status = json_schema_grammar(test::status_schema()).value();
  BOOST_TEST(ready(status));
  BOOST_TEST(grammars->size() == 1u);
  const size_t first_mask = grammars->classes_bytes();
  BOOST_TEST(first_mask > 0u);
  BOOST_TEST(ready(status));  // from the cache: nothing new gathered
  BOOST_TEST(grammars->size() == 1u);
  BOOST_TEST(grammars->classes_bytes() == first_mask);

  grammar left_recursive;  // root: root "a" | "a"
  byte_set a;
  a.add('a', 'a');
  left_recursive.byte_sets = {a};
  left_recursive.rules = {
      grammar_rule{{grammar_alternative{{{true, 0}, {false, 0}}}, grammar_alternative{{{false, 0}}}}}};
  BOOST_TEST(!ready(left_recursive));
  BOOST_TEST(grammars->size() == 1u);
  BOOST_TEST(ready(status));
  self->send_exit(warmer, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(readies_the_contexts_inside_strings) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  auto grammars = std::make_shared<grammar_cache>(8, size_t(64) << 20);
  const auto vocabulary = test::json_vocabulary(384, 382);
  auto warmer = system.spawn<caf::detached>(grammar_warmer, grammars, ready_vocabulary(vocabulary));
  caf::scoped_actor self{system};
  const grammar notes = json_schema_grammar(nlohmann::json::parse(R"({"type":"object","properties":{
      "note":{"type":"string","maxLength":40},"title":{"type":"string"}},"required":["note","title"]})"))
                            .value();
  self->request(warmer, std::chrono::seconds(30), grammar_atom::value, notes)
      .receive([&](bool b) { BOOST_TEST(b); }, [&](const caf::error& e) { BOOST_FAIL(system.render(e)); });
  const auto compiled = grammars->get(notes).value();
  // The bounded string (a counted run: also its twin's context) and the unbounded one, each
  // after an item alone and above the string's closing quote.
  BOOST_TEST(compiled->repetition_contexts().size() >= 4u);
  for (const auto& context : compiled->repetition_contexts()) {
    BOOST_TEST(compiled->find_classes(&vocabulary->trie, context) != nullptr);
    if (const auto* step = compiled->run_step_at(context[0])) {
      auto twin = context;
      twin[0] = step->twin_start;
      BOOST_TEST(compiled->find_classes(&vocabulary->trie, twin) != nullptr);
    }
  }
  self->send_exit(warmer, caf::exit_reason::user_shutdown);
}
