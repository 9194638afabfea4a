// The Jinja engine's statements and whitespace control, against what Python jinja2
// renders with transformers' settings (trim_blocks, lstrip_blocks).
#define BOOST_TEST_MODULE jinja_statements
#include <boost/test/unit_test.hpp>

#include "tests/support/jinja_render.hpp"

using troupe::test::check_all;
using troupe::test::render;

BOOST_AUTO_TEST_CASE(whitespace_control) {
  check_all({
      {R"~(a  {{- 'x' -}}  b)~", R"~({})~", R"~(axb)~"},
      {R"~(a  {%- if true -%}  x  {%- endif -%}  b)~", R"~({})~", R"~(axb)~"},
      {"a\n  {% if true %}\nb\n  {% endif %}\nc\n", R"~({})~", "a\nb\nc"},
      {"a\n  {# note #}\nb", R"~({})~", "a\nb"},
      {"a\n  {{ 'x' }}\nb", R"~({})~", "a\n  x\nb"},
      {"a  {% if true %}x{% endif %}", R"~({})~", "a  x"},
      {"a\n  {%+ if true %}x{% endif +%}\ny", R"~({})~", "a\n  x\ny"},
      {"{%- if true %}\n    {{- 'x' }}\n{%- endif %}\n", R"~({})~", "x"},
      {"line\n\n", R"~({})~", "line\n"},
      {"a\r\nb\rc", R"~({})~", "a\nb\nc"},
      {"a {#- comment -#} b", R"~({})~", "ab"},
      {"{ not a tag } {%", R"~({})~", "COMPILE ERROR: line 1: unclosed '{%' tag"},
      {"{{ {'a': {'b': 1}} }}", R"~({})~", "{'a': {'b': 1}}"},
  });
}

BOOST_AUTO_TEST_CASE(if_elif_else) {
  check_all({
      {"{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}", R"~({"x": 2})~", "two"},
      {"{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}", R"~({"x": 5})~", "many"},
      {"{% if x %}yes{% endif %}", R"~({"x": []})~", ""},
      {"{% if x %}yes{% endif %}", R"~({})~", ""},
  });
}

BOOST_AUTO_TEST_CASE(for_loops) {
  check_all({
      {"{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
       "{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}",
       R"~({"xs": ["a", "b"]})~", "1021TrueFalse2 2110FalseTrue2 "},
      {"{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }};{% endfor %}", R"~({"xs": [1, 2, 3]})~",
       "<1>2;1<2>3;2<3>;"},
      {"{% for i in range(5) if i is odd %}{{ loop.index }}/{{ loop.length }}:{{ i }} {% endfor %}", R"~({})~",
       "1/2:1 2/2:3 "},
      {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"~({"d": {"b": 1, "a": 2}})~", "b=1;a=2;"},
      {"{% for k in d %}{{ k }};{% endfor %}", R"~({"d": {"b": 1, "a": 2}})~", "b;a;"},
      {"{% for c in 'héé' %}[{{ c }}]{% endfor %}", R"~({})~", "[h][é][é]"},
      {"{% for x in [] %}x{% else %}empty{% endfor %}", R"~({})~", "empty"},
      {"{% for x in missing %}x{% endfor %}ok", R"~({})~", "ok"},
      {"{% for i in range(6) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}"
       "{{ i }}{% endfor %}",
       R"~({})~", "023"},
      {"{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}", R"~({})~", "3 7 "},
      {"{% for x in [[1, 2], [3]] %}{% for y in x %}{{ loop.index }}{% endfor %}|{% endfor %}", R"~({})~", "12|1|"},
  });
}

BOOST_AUTO_TEST_CASE(loop_scoping_follows_jinja2) {
  check_all({
      // A set inside a loop lives for one iteration and never leaks out.
      {"{% for i in [1, 2] %}{% if i == 1 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %}[{{ x }}]", R"~({})~",
       "[a][][]"},
      {"{% set x = 'o' %}{% for i in [1, 2] %}{% if i == 1 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %}"
       "[{{ x }}]",
       R"~({})~", "[a][o][o]"},
      // `if` is no scope; a namespace carries state out of a loop.
      {"{% if true %}{% set y = 1 %}{% endif %}{{ y }}", R"~({})~", "1"},
      {"{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
       R"~({})~", "6"},
      {"{% for m in ms %}{% set m = m ~ '!' %}{{ m }}{% endfor %}", R"~({"ms": ["a", "b"]})~", "a!b!"},
  });
}

BOOST_AUTO_TEST_CASE(set_forms) {
  check_all({
      {"{% set a, b = [1, 2] %}{{ a }}{{ b }}", R"~({})~", "12"},
      {"{% set x %}a{{ 1 + 1 }}b{% endset %}[{{ x }}]", R"~({})~", "[a2b]"},
      {"{% set ns = namespace(x=1, y='s') %}{% set ns.x = ns.x + 1 %}{{ ns.x }}{{ ns.y }}{{ ns['x'] }}", R"~({})~",
       "2s2"},
      {"{% set messages = [] %}{{ messages | length }}", R"~({"messages": [1, 2]})~", "0"},
      {"{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns }}", R"~({})~",
       "<Namespace {'a': 1, 'me': <Namespace {...}>}>"},
  });
}

BOOST_AUTO_TEST_CASE(macros) {
  check_all({
      {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ada') }} "
       "{{ greet('Bob', '?') }} {{ greet(punct='.', name='Cy') }}",
       R"~({})~", "Hi Ada! Hi Bob? Hi Cy."},
      {"{% macro m(a, b=a ~ '!') %}{{ a }}{{ b }}{% endmacro %}{{ m('x') }}|{{ m() }}", R"~({})~", "xx!|!"},
      // Macros see the template's variables, not their caller's loop variables.
      {"{% macro m() %}{{ g }}{{ y }}{% endmacro %}{% for y in [1] %}{{ m() }}{% endfor %}", R"~({"g": "G"})~", "G"},
      {"{% macro count(n) %}{% if n > 0 %}{{ n }}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(3) }}", R"~({})~",
       "321"},
      {"{% set ns = namespace(v=0) %}{% macro bump() %}{% set ns.v = ns.v + 1 %}{% endmacro %}"
       "{{ bump() }}{{ bump() }}{{ ns.v }}",
       R"~({})~", "2"},
      {"{% macro m(x) %} {{ x }} {% endmacro %}[{{ m(1) | trim }}]", R"~({})~", "[1]"},
  });
}

BOOST_AUTO_TEST_CASE(transformers_generation_block_renders_its_body) {
  check_all({{"a{% generation %}b{% endgeneration %}c", R"~({})~", "abc"}});
}
