// The Jinja engine's expressions, tests and methods, against what Python jinja2 renders:
// Python's operators, printing (True, None, 1.0, ['a']) and str methods.
#define BOOST_TEST_MODULE jinja_expressions
#include <boost/test/unit_test.hpp>

#include "tests/support/jinja_render.hpp"

using troupe::test::check_all;
using troupe::test::render;

BOOST_AUTO_TEST_CASE(literals_and_printing) {
  check_all({
      {R"~({{ 'it\'s' }} {{ "a\"b" }} {{ 'tab\there' }} {{ '\u00e9\x41' }} {{ 'a' 'b' }})~", R"~({})~",
       "it's a\"b tab\there éA ab"},
      {R"~({{ 1_000 }} {{ 1.5 }} {{ 1e3 }} {{ 2.0 }} {{ true }} {{ True }} {{ none }} {{ None }} [{{ nope }}])~",
       R"~({})~", "1000 1.5 1000.0 2.0 True True None None []"},
      {R"~({{ [1, 'a', none, true, 1.5, {'k': 'v'}] }} {{ {'q': "it's"} }})~", R"~({})~",
       "[1, 'a', None, True, 1.5, {'k': 'v'}] {'q': \"it's\"}"},
      {R"~({{ x }} {{ y }} {{ z }} {{ big }})~", R"~({"x": 0.1, "y": 1e-7, "z": 1e16, "big": 123456789012345678.0})~",
       "0.1 1e-07 1e+16 1.2345678901234568e+17"},
      {R"~({{ d }})~", R"~({"d": {"b": [1, {"c": null}], "a": "x\ny"}})~", "{'b': [1, {'c': None}], 'a': 'x\\ny'}"},
  });
}

BOOST_AUTO_TEST_CASE(arithmetic_follows_python) {
  check_all({
      {"{{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }}", R"~({})~",
       "3.5 2.0 3 -4 1 2 -2"},
      {"{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ 1 + 1.5 }} {{ true + 1 }}", R"~({})~", "1024 0.5 3.0 2.5 2"},
      {"{{ 1 + 2 * 3 ** 2 }} {{ -2 ** 2 }} {{ (1 + 2) * 3 }} {{ -x }}", R"~({"x": 4})~", "19 4 9 -4"},
      {"{{ 'ab' * 2 }} {{ 2 * 'ab' }} {{ [1] * 2 }} {{ 'a' + 'b' }} {{ [1] + [2] }}", R"~({})~",
       "abab abab [1, 1] ab [1, 2]"},
      {"{{ 'a' ~ 1 ~ none ~ true ~ 1.0 ~ [1] ~ missing }}", R"~({})~", "a1NoneTrue1.0[1]"},
  });
}

BOOST_AUTO_TEST_CASE(comparisons_logic_and_membership) {
  check_all({
      {"{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }} {{ [1, 2] == [1, 2] }} {{ d == e }}",
       R"~({"d": {"a": 1, "b": 2}, "e": {"b": 2, "a": 1}})~", "True True True True True"},
      {"{{ 1 < 2 }} {{ 'a' < 'b' }} {{ 'é' > 'z' }} {{ [1, 2] < [1, 3] }} {{ 2 >= 2.0 }}", R"~({})~",
       "True True True True True"},
      {"{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 'v' in d }} {{ 1 not in [] }} {{ 'x' in nope }}",
       R"~({"d": {"k": "v"}})~", "True True True False True False"},
      {"{{ '' or 'x' }} {{ 0 and 1 }} {{ 'a' and 'b' }} {{ not [] }} {{ not true == false }}", R"~({})~",
       "x 0 b True True"},
      {"{{ 'y' if x else 'n' }} {{ 'y' if not x else 'n' }} [{{ 'y' if false }}]", R"~({"x": 1})~", "y n []"},
  });
}

BOOST_AUTO_TEST_CASE(subscripts_and_slices) {
  check_all({
      {"{{ xs[0] }} {{ xs[-1] }} [{{ xs[9] }}] {{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[1::-1] }}",
       R"~({"xs": [1, 2, 3]})~", "1 3 [] [2, 3] [1, 2] [3, 2, 1] [1, 3] [2, 1]"},
      {"{{ s[0] }} {{ s[-1] }} {{ s[1:-1] }} {{ s[::-1] }}", R"~({"s": "héllo"})~", "h o éll olléh"},
      {"{{ d.a }} {{ d['a'] }} [{{ d.missing }}] {{ d.nested.x }} {{ d['nested']['x'] }} {{ xs.0 }}",
       R"~({"d": {"a": 1, "nested": {"x": 2}}, "xs": [7]})~", "1 1 [] 2 2 7"},
      // As in Python, a dict's methods win over keys of the same name.
      {"{{ d.items is callable }} {{ d['items'] }}", R"~({"d": {"items": 5}})~", "True 5"},
      {"[{{ none.x }}]", R"~({})~", "[]"},
      // jinja2 turns a failed subscript into undefined.
      {"[{{ z[0] }}] [{{ xs['a'] }}] [{{ xs[1.5] }}]", R"~({"z": 5, "xs": [1]})~", "[] [] []"},
  });
}

BOOST_AUTO_TEST_CASE(tests) {
  check_all({
      {"{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ n is none }} {{ n is not none }}",
       R"~({"x": null, "n": null})~", "True False True True False"},
      {"{{ 's' is string }} {{ d is mapping }} {{ l is mapping }} {{ l is iterable }} {{ d is iterable }} "
       "{{ 's' is iterable }} {{ 1 is iterable }} {{ l is sequence }}",
       R"~({"d": {}, "l": []})~", "True True False True True True False True"},
      {"{{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} "
       "{{ 1.5 is float }} {{ 's' is number }}",
       R"~({})~", "True True True True False True False"},
      {"{{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }} "
       "{{ none is false }}",
       R"~({})~", "True False True False True False"},
      {"{{ 3 is odd }} {{ -3 is odd }} {{ 0.5 is odd }} {{ 0.5 is even }} {{ 4.0 is even }}", R"~({})~",
       "True True False False True"},
      {"{{ 3 is odd }} {{ 3 is even }} {{ 4 is divisibleby 2 }} {{ 1 is eq 1 }} {{ 2 is in [1, 2] }} "
       "{{ 'ab' is lower }} {{ 'AB' is upper }}",
       R"~({})~", "True False True True True True True"},
  });
}

BOOST_AUTO_TEST_CASE(string_methods) {
  check_all({
      {"{{ s.startswith('<a') }} {{ s.endswith('>') }} {{ s.startswith(('x', '<')) }}", R"~({"s": "<a>"})~",
       "True True True"},
      {"{{ 'a,b,,c'.split(',') }} {{ '  a b  '.split() }} {{ 'a-b-c'.split('-', 1) }} {{ 'x'.split('</t>')[-1] }}",
       R"~({})~", "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b-c'] x"},
      // strip(chars) strips only those characters (@huggingface/jinja strips all whitespace).
      {"[{{ s.strip('\\n') }}] [{{ s.lstrip('\\n') }}] [{{ s.rstrip('\\n') }}] [{{ s.strip() }}] [{{ "
       "'xxaxx'.strip('x') }}]",
       R"~({"s": "\n  a  \n"})~", "[  a  ] [  a  \n] [\n  a  ] [a] [a]"},
      {"{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.upper() }} {{ 'AB'.lower() }}",
       R"~({})~", "bbb bba AB ab"},
      {"{{ 'hello wORLD'.title() }} {{ \"they're\".title() }} {{ 'hELLO'.capitalize() }}", R"~({})~",
       "Hello World They'Re Hello"},
      {"{{ '{} and {}'.format('a', 1) }} {{ '{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=2) }} {{ '{{}}'.format() "
       "}}",
       R"~({})~", "a and 1 ba 2! {}"},
  });
}

BOOST_AUTO_TEST_CASE(dict_methods) {
  check_all({
      {"{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} "
       "{% for k, v in d.items() %}{{ k }}={{ v }} {% endfor %}",
       R"~({"d": {"a": 1, "b": [2]}})~", "1 None dflt ['a', 'b'] [1, [2]] a=1 b=[2] "},
  });
}

BOOST_AUTO_TEST_CASE(tuples_are_lists) {
  // The one known difference in printing: Python shows a tuple as (1, 2).
  BOOST_TEST(render("{{ (1, 2) }} {{ {'a': 1}.items() | list }}") == "[1, 2] [['a', 1]]");
}
