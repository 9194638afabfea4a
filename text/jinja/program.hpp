#pragma once
// A Jinja template parsed and checked once, then rendered as often as needed. This is the
// engine's entry point; text/chat_template.hpp puts a chat template on top of it.
//
//   auto p = jinja::program::compile("{{ greeting | upper }}, {{ name }}!");
//   auto text = p->render(jinja::object{{"greeting", "hello"}, {"name", "Ada"}});
//
// It implements what chat templates use, with the semantics of the Python jinja2 that
// transformers renders them with (trim_blocks and lstrip_blocks on, transformers' tojson
// and raise_exception). An unknown tag, filter, test, method or function fails compile()
// with the line it is on; a type error while rendering fails render() the same way.
#include <memory>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/ast.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

class program {
 public:
  static result<program> compile(std::string_view source);
  result<std::string> render(const object& variables) const;

 private:
  explicit program(std::shared_ptr<const body> statements) : statements_(std::move(statements)) {}
  std::shared_ptr<const body> statements_;
};

}  // namespace troupe::jinja
