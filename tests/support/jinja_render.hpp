#pragma once
// Shorthands for engine tests: render a template source with variables written as JSON,
// or get the error that compiling or rendering it gives.
#include <initializer_list>
#include <string>

#include "gateway/template_value.hpp"
#include "text/jinja/program.hpp"

namespace troupe::test {

inline jinja::object variables(const char* json) {
  return to_template_value(nlohmann::ordered_json::parse(json)).as_object();
}

// The rendered text, or "ERROR: message" so a failure shows in the comparison.
inline std::string render(const std::string& source, const char* json = "{}") {
  auto program = jinja::program::compile(source);
  if (!program) return "COMPILE ERROR: " + program.err().message;
  auto text = program->render(variables(json));
  return text ? *text : "ERROR: " + text.err().message;
}

// One table row: a template, its variables as JSON, the text it must render.
struct example {
  const char* source;
  const char* variables;
  const char* expected;
};

// Renders every example; needs Boost.Test included first.
inline void check_all(std::initializer_list<example> examples) {
  for (const example& e : examples) {
    BOOST_TEST_CONTEXT("template: " << e.source) { BOOST_TEST(render(e.source, e.variables) == e.expected); }
  }
}

inline std::string compile_error(const std::string& source) {
  auto program = jinja::program::compile(source);
  return program ? "(compiled)" : program.err().message;
}

inline std::string render_error(const std::string& source, const char* json = "{}") {
  auto program = jinja::program::compile(source);
  if (!program) return "COMPILE ERROR: " + program.err().message;
  auto text = program->render(variables(json));
  return text ? "(rendered: " + *text + ")" : text.err().message;
}

}  // namespace troupe::test
