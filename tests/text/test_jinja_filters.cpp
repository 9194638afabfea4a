// The Jinja engine's filters against Python jinja2, with transformers' tojson (json.dumps
// with ensure_ascii off, ", " and ": " separators, key order kept).
#define BOOST_TEST_MODULE jinja_filters
#include <boost/test/unit_test.hpp>

#include "tests/support/jinja_render.hpp"

using troupe::test::check_all;
using troupe::test::render;

BOOST_AUTO_TEST_CASE(tojson_matches_json_dumps) {
  check_all({
      {"{{ v | tojson }}", R"~({"v": {"z": 1, "a": [true, null, 0.5, -3], "é": "日本 🙂", "e": {}, "l": []}})~",
       R"~({"z": 1, "a": [true, null, 0.5, -3], "é": "日本 🙂", "e": {}, "l": []})~"},
      {"{{ v | tojson }}", R"~({"v": "quote \" backslash \\ nl \n tab \t ctl \u0001 <tag> & '"})~",
       R"~("quote \" backslash \\ nl \n tab \t ctl \u0001 <tag> & '")~"},
      {"{{ v | tojson(indent=2) }}", R"~({"v": {"a": [1, {"b": []}], "c": {}}})~",
       "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}"},
      {"{{ v | tojson(ensure_ascii=true) }} {{ v | tojson(sort_keys=true) }}", R"~({"v": {"é": "🙂", "a": 1}})~",
       R"~({"\u00e9": "\ud83d\ude42", "a": 1} {"a": 1, "é": "🙂"})~"},
      {"{{ v | tojson(separators=(',', ':')) }}", R"~({"v": {"a": [1, 2]}})~", R"~({"a":[1,2]})~"},
      {"{{ x | tojson }} {{ y | tojson }} {{ z | tojson }} {{ 2.0 | tojson }}",
       R"~({"x": 1e-7, "y": 1.5e300, "z": 100})~", "1e-07 1.5e+300 100 2.0"},
  });
}

BOOST_AUTO_TEST_CASE(string_filters) {
  check_all({
      {"[{{ '  a b \n' | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ 'ab' | upper }} {{ 'AB' | lower }}", R"~({})~",
       "[a b] [a] AB ab"},
      {"[{{ s | trim }}] [{{ 'héé' | trim('é') }}] [{{ 'éhé' | trim('é') }}]", R"~({"s": "\u00a0x y\u3000\u2003"})~",
       "[x y] [h] [h]"},
      {"{{ 'hELLO wORLD' | capitalize }} {{ 'hello-world (x)' | title }} {{ 'a b' | replace(' ', '_') }} "
       "{{ 'aaa' | replace('a', 'b', 2) }}",
       R"~({})~", "Hello world Hello-World (X) a_b bba"},
      {"{{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | escape }} {{ '<i>' | safe }} {{ 1 | safe is string }}", R"~({})~",
       "&lt;a href=&#34;x&#34;&gt;&amp;&#39; &lt;b&gt; <i> True"},
      {"{{ 1 | string }}{{ none | string }}{{ true | string }}{{ [1, 'a'] | string }}[{{ nope | string }}]", R"~({})~",
       "1NoneTrue[1, 'a'][]"},
  });
}

BOOST_AUTO_TEST_CASE(sequence_filters) {
  check_all({
      {"{{ 'héllo' | length }} {{ [1, 2] | length }} {{ {'a': 1} | length }} {{ nope | length }} {{ [1] | count }}",
       R"~({})~", "5 2 1 0 1"},
      {"{{ [1, 'a', true] | join }} {{ ['a', 'b'] | join(', ') }} {{ 'abc' | join('-') }} "
       "{{ users | join(', ', attribute='name') }}",
       R"~({"users": [{"name": "ann"}, {"name": "bo"}]})~", "1aTrue a, b a-b-c ann, bo"},
      {"{{ 'ab' | list }} {{ {'k': 1} | list }} {{ [3, 1] | list }} {{ nope | list }}", R"~({})~",
       "['a', 'b'] ['k'] [3, 1] []"},
      {"{{ [1, 2] | first }} {{ [1, 2] | last }} {{ 'abc' | first }} {{ 'abc' | last }} [{{ [] | first }}]", R"~({})~",
       "1 2 a c []"},
      {"{{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }} {{ {'a': 1, 'b': 2} | reverse | list }}", R"~({})~",
       "[3, 2, 1] cba ['b', 'a']"},
      {"{% for k, v in d | items %}{{ k }}:{{ v }} {% endfor %}{{ nope | items | list }}",
       R"~({"d": {"b": 1, "a": [2]}})~", "b:1 a:[2] []"},
  });
}

BOOST_AUTO_TEST_CASE(value_filters) {
  check_all({
      {"{{ nope | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }} {{ x | d('d') }} [{{ nope | "
       "default }}]",
       R"~({"x": 0})~", "d None d 0 []"},
      {"{{ ' 42 ' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 4.7 | int }} {{ true | int }} "
       "{{ '0x1A' | int(0, 16) }} {{ none | int }}",
       R"~({})~", "42 4 0 7 4 1 26 0"},
      {"{{ '2.5' | float }} {{ 3 | float }} {{ 'x' | float }} {{ -3 | abs }} {{ -2.5 | abs }}", R"~({})~",
       "2.5 3.0 0.0 3 2.5"},
  });
}

BOOST_AUTO_TEST_CASE(integers_are_64_bit) {
  // Python's ints have no bound; here int() of a huge float gives the default and
  // arithmetic that overflows is an error.
  BOOST_TEST(render("{{ 1e300 | int(-1) }}") == "-1");
  BOOST_TEST(troupe::test::render_error("{{ 2 ** 64 }}") == "line 1: integer overflow in **");
}
