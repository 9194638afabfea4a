#include "text/jinja/renderer.hpp"

#include <optional>

#include "text/jinja/call_args.hpp"
#include "text/jinja/filters.hpp"
#include "text/jinja/globals.hpp"
#include "text/jinja/methods.hpp"
#include "text/jinja/nesting_level.hpp"
#include "text/jinja/operators.hpp"
#include "text/jinja/predicates.hpp"
#include "text/jinja/to_string.hpp"
#include "text/jinja/utf8.hpp"

namespace troupe::jinja {
namespace {

struct frame {
  std::shared_ptr<frame> parent;
  std::vector<std::pair<std::string, value>> vars;

  const value* find(std::string_view name) const {
    for (const auto& [key, v] : vars)
      if (key == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, value v) {
    for (auto& [key, old] : vars)
      if (key == name) {
        old = std::move(v);
        return;
      }
    vars.emplace_back(name, std::move(v));
  }
};
using frame_ptr = std::shared_ptr<frame>;

}  // namespace

// A value that can be called: a macro with the scope it was defined in, a global
// function, or a method bound to its receiver. The scope is held weakly: the frame holds
// the macro, so a strong reference would be a cycle.
struct callable {
  const stmt* macro = nullptr;
  std::weak_ptr<frame> closure;
  std::string global;
  value self;
  std::string method;
};

namespace {

// Python recurses about this deep before giving up on a template.
constexpr int max_macro_depth = 128;
// Rendering recurses once per block and expression level, through macro calls too: past
// this many it fails, as Python would with a RecursionError, well inside a thread's stack.
constexpr int max_render_depth = 1000;

class renderer {
 public:
  explicit renderer(const object& variables) : variables_(variables) {}

  result<std::string> run(const body& program) {
    std::string out;
    exec_body(program, std::make_shared<frame>(), out);
    for (const value& ns : namespaces_) ns.as_namespace().attributes = object();
    if (error_) return *error_;
    return out;
  }

 private:
  enum class flow { next, break_loop, continue_loop };

  bool failed() const { return error_.has_value(); }
  value fail(int line, const std::string& what) {
    if (!error_) error_ = error{"line " + std::to_string(line) + ": " + what};
    return {};
  }

  // ---- statements ----

  flow exec_body(const body& b, const frame_ptr& f, std::string& out) {
    const nesting_level nested(render_depth_);
    if (nested.deeper_than(max_render_depth) && !b.empty()) {
      fail_too_deep(b.front()->line);
      return flow::next;
    }
    for (const auto& s : b) {
      const flow r = exec(*s, f, out);
      if (failed()) return flow::next;
      if (r != flow::next) return r;
    }
    return flow::next;
  }

  flow exec(const stmt& s, const frame_ptr& f, std::string& out) {
    switch (s.type) {
      case stmt::kind::text:
        out += s.text;
        return flow::next;
      case stmt::kind::print: {
        const value v = eval(*s.value, f);
        if (v.is_string())
          out += v.as_string();
        else
          out += to_string(v);
        return flow::next;
      }
      case stmt::kind::if_:
        for (const auto& [condition, branch] : s.branches) {
          const bool taken = truthy(eval(*condition, f));
          if (failed()) return flow::next;
          if (taken) return exec_body(branch, f, out);
        }
        return exec_body(s.else_body, f, out);
      case stmt::kind::for_:
        return exec_for(s, f, out);
      case stmt::kind::set:
        exec_set(s, f);
        return flow::next;
      case stmt::kind::macro: {
        auto fn = std::make_shared<callable>();
        fn->macro = &s;
        fn->closure = f;
        f->set(s.name, value(std::shared_ptr<const callable>(std::move(fn))));
        return flow::next;
      }
      case stmt::kind::break_:
        return flow::break_loop;
      case stmt::kind::continue_:
        return flow::continue_loop;
      case stmt::kind::generation:
        return exec_body(s.body, f, out);
    }
    return flow::next;
  }

  // Binds a loop or set target list: one name takes the value, several unpack it.
  void bind(const stmt& s, const std::vector<std::string>& names, const value& v, frame& f) {
    if (names.size() == 1) {
      f.set(names[0], v);
      return;
    }
    const std::optional<array> parts = iterate(v);
    if (!parts || parts->size() != names.size()) {
      fail(s.line, "cannot unpack " + type_name(v) + " into " + std::to_string(names.size()) + " names");
      return;
    }
    for (std::size_t i = 0; i < names.size(); ++i) f.set(names[i], (*parts)[i]);
  }

  flow exec_for(const stmt& s, const frame_ptr& f, std::string& out) {
    const value seq = eval(*s.value, f);
    if (failed()) return flow::next;
    std::optional<array> all = iterate(seq);
    if (!all) {
      fail(s.line, quoted(type_name(seq)) + " object is not iterable");
      return flow::next;
    }
    std::vector<const value*> items;
    for (const value& item : *all) {
      if (s.condition) {
        auto scope = std::make_shared<frame>(frame{f, {}});
        bind(s, s.targets, item, *scope);
        const bool keep = truthy(eval(*s.condition, scope));
        if (failed()) return flow::next;
        if (!keep) continue;
      }
      items.push_back(&item);
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto scope = std::make_shared<frame>(frame{f, {}});
      bind(s, s.targets, *items[i], *scope);
      const auto n = static_cast<std::int64_t>(items.size()), k = static_cast<std::int64_t>(i);
      object loop{{"index", k + 1},  {"index0", k},        {"revindex", n - k}, {"revindex0", n - k - 1},
                  {"first", k == 0}, {"last", k == n - 1}, {"length", n},       {"depth", 1},
                  {"depth0", 0}};
      if (i > 0) loop.set("previtem", *items[i - 1]);
      if (i + 1 < items.size()) loop.set("nextitem", *items[i + 1]);
      scope->set("loop", value(std::move(loop)));
      const flow r = exec_body(s.body, scope, out);
      if (failed() || r == flow::break_loop) return flow::next;
    }
    if (items.empty()) return exec_body(s.else_body, f, out);
    return flow::next;
  }

  void exec_set(const stmt& s, const frame_ptr& f) {
    value v;
    if (s.value) {
      v = eval(*s.value, f);
    } else {
      std::string text;
      exec_body(s.body, f, text);
      v = value(std::move(text));
    }
    if (failed()) return;
    if (s.attribute.empty()) return bind(s, s.targets, v, *f);
    const value target = lookup(s.targets[0], f);
    if (target.type() != value::kind::name_space) {
      fail(s.line, "cannot assign attribute on non-namespace object");
      return;
    }
    target.as_namespace().attributes.set(s.attribute, std::move(v));
  }

  // ---- names and calls ----

  value lookup(const std::string& name, const frame_ptr& f) const {
    for (const frame* scope = f.get(); scope; scope = scope->parent.get())
      if (const value* v = scope->find(name)) return *v;
    if (const value* v = variables_.find(name)) return *v;
    if (is_global_function(name)) {
      auto fn = std::make_shared<callable>();
      fn->global = name;
      return value(std::shared_ptr<const callable>(std::move(fn)));
    }
    return {};
  }

  call_args eval_args(const expr& e, const frame_ptr& f) {
    call_args args;
    for (std::size_t i = 1; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], f));
    for (const auto& [key, arg] : e.keywords) args.keywords.emplace_back(key, eval(*arg, f));
    return args;
  }

  value eval_call(const expr& e, const frame_ptr& f) {
    const expr& callee = *e.args[0];
    if (callee.type == expr::kind::attribute) {
      // A method call: skip building a bound method for the common case.
      const value self = eval(*callee.args[0], f);
      if (failed()) return {};
      if (has_method(self, callee.name)) {
        const call_args args = eval_args(e, f);
        if (failed()) return {};
        return settle(e.line, call_method(self, callee.name, args));
      }
      const value fn = attribute(self, callee.name, callee.line);
      if (!failed() && fn.type() != value::kind::callable)
        return fail(e.line, quoted(type_name(self)) + " object has no method " + quoted(callee.name));
      return invoke(fn, eval_args(e, f), e.line);
    }
    const value fn = eval(callee, f);
    if (!failed() && callee.type == expr::kind::name && fn.is_undefined())
      return fail(e.line, quoted(callee.name) + " is undefined");
    return invoke(fn, eval_args(e, f), e.line);
  }

  value invoke(const value& fn, const call_args& args, int line) {
    if (failed()) return {};
    if (fn.type() != value::kind::callable) return fail(line, quoted(type_name(fn)) + " object is not callable");
    const callable& c = fn.as_callable();
    if (c.macro) return call_macro(c, args, line);
    if (!c.method.empty()) return settle(line, call_method(c.self, c.method, args));
    if (c.global == "raise_exception") {
      std::string message = args.positional.empty() ? std::string() : to_string(args.positional[0]);
      if (message.empty()) return fail(line, "the template raised an exception without a message");
      if (!error_) error_ = error{std::move(message)};
      return {};
    }
    value made = settle(line, call_global(c.global, args));
    if (made.type() == value::kind::name_space) namespaces_.push_back(made);
    return made;
  }

  value call_macro(const callable& c, const call_args& args, int line) {
    const stmt& def = *c.macro;
    if (args.positional.size() > def.params.size())
      return fail(line,
                  "macro '" + def.name + "' takes not more than " + std::to_string(def.params.size()) + " argument(s)");
    for (const auto& [key, v] : args.keywords) {
      bool known = false;
      for (const auto& [param, fallback] : def.params) known = known || param == key;
      if (!known) return fail(line, "macro '" + def.name + "' takes no keyword argument '" + key + "'");
    }
    if (depth_ >= max_macro_depth) return fail(line, "macro calls nest too deeply");
    frame_ptr closure = c.closure.lock();
    if (!closure) return fail(line, "macro '" + def.name + "' was called outside the loop that defined it");
    auto scope = std::make_shared<frame>(frame{std::move(closure), {}});
    for (std::size_t i = 0; i < def.params.size(); ++i) {
      const auto& [param, fallback] = def.params[i];
      const value* given = args.get(i, param);
      scope->set(param, given ? *given : fallback ? eval(*fallback, scope) : value());
    }
    std::string out;
    ++depth_;
    exec_body(def.body, scope, out);
    --depth_;
    return value(std::move(out));
  }

  value settle(int line, result<value> r) {
    if (!r) return fail(line, r.err().message);
    return std::move(r).value();
  }

  // ---- expressions ----

  value attribute(const value& obj, const std::string& name, int line) {
    if (has_method(obj, name)) {  // Python finds a dict's methods before its keys
      auto fn = std::make_shared<callable>();
      fn->self = obj;
      fn->method = name;
      return value(std::shared_ptr<const callable>(std::move(fn)));
    }
    switch (obj.type()) {
      case value::kind::undefined:
        return fail(line, "cannot read attribute '" + name + "' of an undefined value");
      case value::kind::object:
        if (const value* v = obj.as_object().find(name)) return *v;
        return {};
      case value::kind::name_space:
        if (const value* v = obj.as_namespace().attributes.find(name)) return *v;
        return {};
      default:
        return {};
    }
  }

  value item(const value& obj, const value& key, int line) {
    if (obj.is_undefined()) return fail(line, "cannot index an undefined value");
    if (key.is_string()) {
      if (obj.is_object()) {
        if (const value* v = obj.as_object().find(key.as_string())) return *v;
      } else if (obj.type() == value::kind::name_space) {
        if (const value* v = obj.as_namespace().attributes.find(key.as_string())) return *v;
      }
      return {};
    }
    if (!key.is_int() && !key.is_bool()) return {};
    std::int64_t i = key.is_int() ? key.as_int() : key.as_bool();
    if (obj.is_array()) {
      const auto n = static_cast<std::int64_t>(obj.as_array().size());
      if (i < 0) i += n;
      return i >= 0 && i < n ? obj.as_array()[i] : value();
    }
    if (obj.is_string()) {
      const std::string& s = obj.as_string();
      const std::vector<std::size_t> at = utf8::boundaries(s);
      const auto n = static_cast<std::int64_t>(at.size()) - 1;
      if (i < 0) i += n;
      return i >= 0 && i < n ? value(s.substr(at[i], at[i + 1] - at[i])) : value();
    }
    return {};
  }

  value slice(const expr& e, const frame_ptr& f) {
    const value obj = eval(*e.args[0], f);
    std::optional<std::int64_t> bound[3];
    for (int k = 0; k < 3; ++k) {
      if (!e.args[k + 1]) continue;
      const value b = eval(*e.args[k + 1], f);
      if (b.is_int() || b.is_bool())
        bound[k] = b.is_int() ? b.as_int() : b.as_bool();
      else if (!b.is_none())
        return fail(e.line, "slice indices must be integers or None");
    }
    if (failed()) return {};
    // Unlike other subscripts, a slice that Python refuses is an error in jinja2 too.
    if (obj.is_undefined()) return fail(e.line, "cannot slice an undefined value");
    if (obj.is_object()) return fail(e.line, "unhashable type: 'slice'");
    if (!obj.is_array() && !obj.is_string())
      return fail(e.line, quoted(type_name(obj)) + " object is not subscriptable");
    const std::vector<std::size_t> at =
        obj.is_string() ? utf8::boundaries(obj.as_string()) : std::vector<std::size_t>{};
    const std::int64_t n =
        obj.is_array() ? static_cast<std::int64_t>(obj.as_array().size()) : static_cast<std::int64_t>(at.size()) - 1;
    const std::int64_t step = bound[2].value_or(1);
    if (step == 0) return fail(e.line, "slice step cannot be zero");
    // CPython's PySlice_AdjustIndices.
    const auto adjust = [&](std::optional<std::int64_t> b, std::int64_t fallback) {
      if (!b) return fallback;
      std::int64_t x = *b;
      if (x < 0) {
        x += n;
        if (x < 0) x = step < 0 ? -1 : 0;
      } else if (x >= n) {
        x = step < 0 ? n - 1 : n;
      }
      return x;
    };
    const std::int64_t start = adjust(bound[0], step < 0 ? n - 1 : 0);
    const std::int64_t stop = adjust(bound[1], step < 0 ? -1 : n);
    array items;
    std::string text;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (obj.is_array())
        items.push_back(obj.as_array()[i]);
      else
        text += obj.as_string().substr(at[i], at[i + 1] - at[i]);
    }
    return obj.is_array() ? value(std::move(items)) : value(std::move(text));
  }

  value fail_too_deep(int line) {
    return fail(line, "the template nests more than " + std::to_string(max_render_depth) +
                          " levels deep as rendered (blocks and expressions, through macro calls)");
  }

  value eval(const expr& e, const frame_ptr& f) {
    if (failed()) return {};
    const nesting_level nested(render_depth_);
    if (nested.deeper_than(max_render_depth)) return fail_too_deep(e.line);
    switch (e.type) {
      case expr::kind::literal:
        return e.literal;
      case expr::kind::name:
        return lookup(e.name, f);
      case expr::kind::list: {
        array items;
        for (const expr_ptr& a : e.args) items.push_back(eval(*a, f));
        return value(std::move(items));
      }
      case expr::kind::dict: {
        object o;
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const value key = eval(*e.args[i], f);
          if (!failed() && !key.is_string()) return fail(e.line, "dict keys must be strings");
          o.set(key.is_string() ? key.as_string() : std::string(), eval(*e.args[i + 1], f));
        }
        return value(std::move(o));
      }
      case expr::kind::attribute: {
        const value obj = eval(*e.args[0], f);
        return failed() ? value() : attribute(obj, e.name, e.line);
      }
      case expr::kind::item: {
        const value obj = eval(*e.args[0], f);
        const value key = eval(*e.args[1], f);
        return failed() ? value() : item(obj, key, e.line);
      }
      case expr::kind::slice:
        return slice(e, f);
      case expr::kind::call:
        return eval_call(e, f);
      case expr::kind::filter: {
        const value operand = eval(*e.args[0], f);
        const call_args args = eval_args(e, f);
        return failed() ? value() : settle(e.line, apply_filter(e.name, operand, args));
      }
      case expr::kind::test: {
        const value operand = eval(*e.args[0], f);
        const call_args args = eval_args(e, f);
        if (failed()) return {};
        result<bool> r = apply_test(e.name, operand, args);
        if (!r) return fail(e.line, r.err().message);
        return value(*r != e.negated);
      }
      case expr::kind::unary: {
        const value v = eval(*e.args[0], f);
        if (e.name == "not") return value(!truthy(v));
        return failed() ? value() : settle(e.line, apply_unary(e.name, v));
      }
      case expr::kind::binary: {
        value lhs = eval(*e.args[0], f);
        if (e.name == "and") return truthy(lhs) ? eval(*e.args[1], f) : lhs;
        if (e.name == "or") return truthy(lhs) ? lhs : eval(*e.args[1], f);
        const value rhs = eval(*e.args[1], f);
        return failed() ? value() : settle(e.line, apply_binary(e.name, lhs, rhs));
      }
      case expr::kind::ternary:
        if (truthy(eval(*e.args[0], f))) return eval(*e.args[1], f);
        return e.args[2] ? eval(*e.args[2], f) : value();
    }
    return {};
  }

  const object& variables_;
  // Every namespace the render made, emptied when it ends: one that holds itself
  // ({% set ns.self = ns %}) would otherwise never be freed.
  std::vector<value> namespaces_;
  std::optional<error> error_;
  int depth_ = 0;  // macro calls
  int render_depth_ = 0;
};

}  // namespace

result<std::string> render(const body& program, const object& variables) { return renderer(variables).run(program); }

}  // namespace troupe::jinja
