#include "text/jinja/program.hpp"

#include "text/jinja/checker.hpp"
#include "text/jinja/parser.hpp"
#include "text/jinja/renderer.hpp"

namespace troupe::jinja {

result<program> program::compile(std::string_view source) {
  result<body> parsed = parse(source);
  if (!parsed) return parsed.err();
  if (status s = check(*parsed); !s) return s.err();
  return program(std::make_shared<const body>(std::move(parsed).value()));
}

result<std::string> program::render(const object& variables) const { return jinja::render(*statements_, variables); }

}  // namespace troupe::jinja
