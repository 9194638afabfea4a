// Templates the engine refuses: at load time for anything it does not implement or cannot
// parse, at render time for type errors and raise_exception. Every error is a value that
// names the template line (raise_exception's message stands alone, as in transformers).
#define BOOST_TEST_MODULE jinja_errors
#include <boost/test/unit_test.hpp>

#include "tests/support/jinja_render.hpp"

using troupe::test::compile_error;
using troupe::test::render_error;

BOOST_AUTO_TEST_CASE(unknown_names_fail_at_load) {
  BOOST_TEST(compile_error("a\n{{ x | frobnicate }}") == "line 2: unknown filter 'frobnicate'");
  BOOST_TEST(compile_error("{% if x is prime %}{% endif %}") == "line 1: unknown test 'prime'");
  BOOST_TEST(compile_error("\n\n{{ s.casefold() }}") == "line 3: unknown method 'casefold'");
  BOOST_TEST(compile_error("{{ cycler('a') }}") == "line 1: unknown function 'cycler'");
  BOOST_TEST(compile_error("{% include 'x' %}") == "line 1: unknown tag 'include'");
  BOOST_TEST(compile_error("{% for x in y recursive %}{% endfor %}") == "line 1: recursive loops are not supported");
  BOOST_TEST(compile_error("{{ f(*args) }}") == "line 1: argument unpacking (* and **) is not supported");
  // Names used only inside a macro are checked too; a macro defined anywhere may be called.
  BOOST_TEST(compile_error("{% macro m() %}{{ 1 | nope }}{% endmacro %}") == "line 1: unknown filter 'nope'");
  BOOST_TEST(compile_error("{{ later() }}{% macro later() %}{% endmacro %}") == "(compiled)");
}

BOOST_AUTO_TEST_CASE(syntax_errors_name_the_line) {
  BOOST_TEST(compile_error("ok\n{{ x ") == "line 2: unclosed '{{' tag");
  BOOST_TEST(compile_error("ok\n\n{% if x ") == "line 3: unclosed '{%' tag");
  BOOST_TEST(compile_error("{# never closed") == "line 1: unclosed comment '{#'");
  BOOST_TEST(compile_error("a\n{% if x %}\nb\n{% for y in z %}\n{% endfor %}") ==
             "line 2: block is never closed: missing {% endif %}");
  BOOST_TEST(compile_error("{% for x in y %}{% endif %}") == "line 1: unexpected {% endif %}, expected {% endfor %}");
  BOOST_TEST(compile_error("text\n{% endfor %}") == "line 2: unexpected {% endfor %}");
  BOOST_TEST(compile_error("{{ 'unterminated }}") == "line 1: unterminated string literal");
  BOOST_TEST(compile_error("{{ 1 + }}") == "line 1: unexpected '}}'");
  BOOST_TEST(compile_error("{{ a < b < c }}") == "line 1: chained comparisons are not supported");
  BOOST_TEST(compile_error("{% break %}") == "line 1: break outside a for loop");
  BOOST_TEST(compile_error("{% for x in y %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}") ==
             "line 1: continue outside a for loop");
}

BOOST_AUTO_TEST_CASE(raise_exception_is_the_whole_message) {
  BOOST_TEST(render_error("{% if not ok %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}") ==
             "Conversation roles must alternate");
  BOOST_TEST(render_error("{% macro m() %}{{ raise_exception('from ' ~ 'macro') }}{% endmacro %}x{{ m() }}") ==
             "from macro");
  // Without a message the error still says what happened, and where.
  BOOST_TEST(render_error("\n{{ raise_exception('') }}") ==
             "line 2: the template raised an exception without a message");
  BOOST_TEST(render_error("{{ raise_exception() }}") == "line 1: the template raised an exception without a message");
}

BOOST_AUTO_TEST_CASE(type_errors_fail_at_render) {
  BOOST_TEST(render_error("\n{{ 1 + 'a' }}") == "line 2: unsupported operand types for +: 'int' and 'str'");
  BOOST_TEST(render_error("{{ m.content }}", R"({"m": null})") == "(rendered: )");
  BOOST_TEST(render_error("{{ missing.content }}") == "line 1: cannot read attribute 'content' of an undefined value");
  BOOST_TEST(render_error("{{ missing[0] }}") == "line 1: cannot index an undefined value");
  BOOST_TEST(render_error("{{ x.startswith('a') }}", R"({"x": 5})") ==
             "line 1: 'int' object has no method 'startswith'");
  BOOST_TEST(render_error("{% if '</think>' in c %}{% endif %}", R"({"c": null})") ==
             "line 1: argument of type 'NoneType' is not iterable");
  BOOST_TEST(render_error("{% for x in n %}{% endfor %}", R"({"n": 3})") == "line 1: 'int' object is not iterable");
  BOOST_TEST(render_error("{{ 1 // 0 }}") == "line 1: integer division by zero");
  BOOST_TEST(render_error("{{ [] in {} }}") == "line 1: unhashable type: 'list'");
  BOOST_TEST(render_error("{{ z[1:] }}", R"({"z": 5})") == "line 1: 'int' object is not subscriptable");
  BOOST_TEST(render_error("{{ xs[n:] }}", R"({"xs": [], "n": "a"})") ==
             "line 1: slice indices must be integers or None");
  BOOST_TEST(render_error("{{ 1 < 'a' }}") == "line 1: '<' not supported between instances of 'int' and 'str'");
  BOOST_TEST(render_error("{% set a, b = [1] %}") == "line 1: cannot unpack list into 2 names");
  BOOST_TEST(render_error("{% set d = {} %}{% set d.x = 1 %}") ==
             "line 1: cannot assign attribute on non-namespace object");
  BOOST_TEST(render_error("{{ s | items }}", R"({"s": "text"})") ==
             "line 1: Can only get item pairs from a mapping, got 'str'");
  BOOST_TEST(render_error("{{ [1] | tojson }}{{ nope | tojson }}") ==
             "line 1: Object of type Undefined is not JSON serializable");
  BOOST_TEST(render_error("{{ nope | int }}") == "line 1: filter int got an undefined value");
  BOOST_TEST(render_error("{{ 'x' * 1000000000000 }}") == "line 1: repeated sequence would be too long");
  BOOST_TEST(render_error("{{ 'x'.split('') }}") == "line 1: split: empty separator");
  BOOST_TEST(render_error("{{ 'a'.replace('a') }}") == "line 1: replace() needs two strings");
  BOOST_TEST(render_error("{{ '{99999999999999999999}'.format(1) }}") ==
             "line 1: format: no argument for '{99999999999999999999}'");
  BOOST_TEST(render_error("{{ 'x' | trim(1, 2) }}") == "line 1: trim takes at most 1 argument(s), got 2");
  BOOST_TEST(render_error("{{ d.get() }}", R"({"d": {}})") == "line 1: get expected at least 1 argument, got 0");
}

BOOST_AUTO_TEST_CASE(macro_call_errors) {
  BOOST_TEST(render_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}") ==
             "line 1: macro 'm' takes not more than 1 argument(s)");
  BOOST_TEST(render_error("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}") ==
             "line 1: macro 'm' takes no keyword argument 'b'");
  BOOST_TEST(render_error("{{ later() }}{% macro later() %}{% endmacro %}") == "line 1: 'later' is undefined");
  BOOST_TEST(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}") == "line 1: macro calls nest too deeply");
  // A macro keeps only a weak hold on the loop iteration it was defined in.
  BOOST_TEST(render_error("{% set ns = namespace() %}{% for i in [1] %}{% macro m() %}{{ i }}{% endmacro %}"
                          "{% set ns.f = m %}{% endfor %}{% set m = ns.f %}{{ m() }}") ==
             "line 1: macro 'm' was called outside the loop that defined it");
}

// Parsing, rendering and freeing a template recurse once per level of nesting: the parser
// refuses nesting past 64 levels, whatever builds it, instead of overflowing the stack.
BOOST_AUTO_TEST_CASE(nesting_is_bounded) {
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const std::string too_deep = "line 1: expressions nest more than 64 levels deep";
  BOOST_TEST(compile_error("{{ " + repeat("(", 63) + "1" + repeat(")", 63) + " }}") == "(compiled)");
  BOOST_TEST(compile_error("{{ " + repeat("(", 64) + "1" + repeat(")", 64) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ " + repeat("(", 100000) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ " + repeat("[", 100000) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ " + repeat("{1: ", 100000) + "1" + repeat("}", 100000) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ " + repeat("not ", 100000) + "x }}") == too_deep);
  BOOST_TEST(compile_error("{{ " + repeat("-", 100000) + "1 }}") == too_deep);
  BOOST_TEST(compile_error("{{ f(" + repeat("f(", 100000) + " }}") == too_deep);
  // Chains deepen the tree without deepening the parser's recursion.
  BOOST_TEST(compile_error("{{ 1" + repeat(" ~ 1", 63) + " }}") == "(compiled)");
  BOOST_TEST(compile_error("{{ 1" + repeat(" ~ 1", 64) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ x" + repeat(".a", 100000) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ x" + repeat("[0]", 100000) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ x" + repeat("|string", 100000) + " }}") == too_deep);
  BOOST_TEST(compile_error("{{ x" + repeat(" if x", 100000) + " }}") == too_deep);
  BOOST_TEST(compile_error(repeat("{% if x %}", 62) + repeat("{% endif %}", 62)) == "(compiled)");
  BOOST_TEST(compile_error(repeat("{% if x %}", 100000)) == "line 1: blocks nest more than 64 levels deep");
  BOOST_TEST(compile_error(repeat("{% for x in y %}", 100000)) == "line 1: blocks nest more than 64 levels deep");

  // Macro calls add up: each of these nests about 125 levels (60 blocks, then a call at the
  // bottom of an expression 62 deep), so 7 calls render and 8 pass the renderer's 1000.
  auto deep_calls = [&](int calls) {
    return "{% macro f(n) %}" + repeat("{% if true %}", 60) + "{% if n > 0 %}{{ f(n - 1)" + repeat(" ~ ''", 60) +
           " ~ n }}{% endif %}" + repeat("{% endif %}", 60) + "{% endmacro %}{{ f(" + std::to_string(calls) + ") }}";
  };
  BOOST_TEST(troupe::test::render(deep_calls(7)) == "1234567");
  BOOST_TEST(render_error(deep_calls(8)) ==
             "line 1: the template nests more than 1000 levels deep as rendered (blocks and "
             "expressions, through macro calls)");
}
