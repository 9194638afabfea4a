#include "text/jinja/checker.hpp"

#include <set>
#include <string>

#include "text/jinja/filters.hpp"
#include "text/jinja/globals.hpp"
#include "text/jinja/methods.hpp"
#include "text/jinja/predicates.hpp"

namespace troupe::jinja {
namespace {

class checker {
 public:
  status run(const body& program) {
    collect_macros(program);
    check_body(program, false);
    if (error_.empty()) return ok();
    return error{error_};
  }

 private:
  void fail(int line, const std::string& what) {
    if (error_.empty()) error_ = "line " + std::to_string(line) + ": " + what;
  }

  void collect_macros(const body& b) {
    for (const auto& s : b) {
      if (s->type == stmt::kind::macro) macros_.insert(s->name);
      collect_macros(s->body);
      collect_macros(s->else_body);
      for (const auto& [condition, branch] : s->branches) collect_macros(branch);
    }
  }

  void check_body(const body& b, bool in_loop) {
    for (const auto& s : b) check_stmt(*s, in_loop);
  }

  void check_stmt(const stmt& s, bool in_loop) {
    if ((s.type == stmt::kind::break_ || s.type == stmt::kind::continue_) && !in_loop)
      fail(s.line, std::string(s.type == stmt::kind::break_ ? "break" : "continue") + " outside a for loop");
    check_expr(s.value.get());
    check_expr(s.condition.get());
    for (const auto& [param, fallback] : s.params) check_expr(fallback.get());
    for (const auto& [condition, branch] : s.branches) {
      check_expr(condition.get());
      check_body(branch, in_loop);
    }
    // A macro body is a new function: a loop around its definition does not enclose it.
    const bool body_in_loop = s.type == stmt::kind::for_ || (in_loop && s.type != stmt::kind::macro);
    check_body(s.body, body_in_loop);
    check_body(s.else_body, in_loop);
  }

  void check_expr(const expr* e) {
    if (!e) return;
    switch (e->type) {
      case expr::kind::filter:
        if (!is_filter(e->name)) fail(e->line, "unknown filter '" + e->name + "'");
        break;
      case expr::kind::test:
        if (!is_test(e->name)) fail(e->line, "unknown test '" + e->name + "'");
        break;
      case expr::kind::call: {
        const expr& callee = *e->args[0];
        if (callee.type == expr::kind::name) {
          if (!is_global_function(callee.name) && !macros_.count(callee.name))
            fail(e->line, "unknown function '" + callee.name + "'");
        } else if (callee.type == expr::kind::attribute) {
          if (!is_method(callee.name)) fail(e->line, "unknown method '" + callee.name + "'");
        } else {
          fail(e->line, "only functions, macros and methods can be called");
        }
        break;
      }
      default:
        break;
    }
    for (const expr_ptr& arg : e->args) check_expr(arg.get());
    for (const auto& [key, arg] : e->keywords) check_expr(arg.get());
  }

  std::set<std::string> macros_;
  std::string error_;
};

}  // namespace

status check(const body& program) { return checker().run(program); }

}  // namespace troupe::jinja
