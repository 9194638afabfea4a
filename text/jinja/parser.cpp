#include "text/jinja/parser.hpp"

#include <initializer_list>
#include <optional>

#include "text/jinja/lexer.hpp"
#include "text/jinja/nesting_level.hpp"

namespace troupe::jinja {
namespace {

// Parsing, checking and freeing a template recurse once per level of its nesting, which the
// parser bounds (real chat templates nest under 15 levels); rendering bounds its own, as
// macro calls add up.
constexpr int max_nesting = 64;

// Stops at the first error: `fail` records it and every step checks `failed()`.
class parser {
 public:
  explicit parser(std::vector<token> tokens) : t_(std::move(tokens)) {}

  result<body> run() {
    body out = parse_body({}, 0);
    if (error_) return *error_;
    return out;
  }

 private:
  // ---- token helpers ----
  const token& peek(std::size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const token& take() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool is_op(std::string_view op, std::size_t ahead = 0) const {
    return peek(ahead).type == token::kind::op && peek(ahead).text == op;
  }
  bool is_name(std::string_view name, std::size_t ahead = 0) const {
    return peek(ahead).type == token::kind::name && peek(ahead).text == name;
  }
  bool accept_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool accept_name(std::string_view name) {
    if (!is_name(name)) return false;
    ++i_;
    return true;
  }
  bool failed() const { return error_.has_value(); }
  void fail(int line, const std::string& what) {
    if (!error_) error_ = error{"line " + std::to_string(line) + ": " + what};
  }
  static std::string describe(const token& t) {
    switch (t.type) {
      case token::kind::end:
        return "end of template";
      case token::kind::block_end:
        return "'%}'";
      case token::kind::print_end:
        return "'}}'";
      case token::kind::string:
        return "a string";
      case token::kind::integer:
      case token::kind::floating:
        return "a number";
      default:
        return "'" + t.text + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!accept_op(op)) fail(peek().line, "expected '" + std::string(op) + "', got " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().type != token::kind::name) {
      fail(peek().line, "expected a name, got " + describe(peek()));
      return {};
    }
    return take().text;
  }
  void expect_block_end() {
    if (peek().type == token::kind::block_end) {
      ++i_;
      return;
    }
    fail(peek().line, "expected '%}', got " + describe(peek()));
  }

  // ---- statements ----

  static std::unique_ptr<stmt> new_stmt(stmt::kind k, int line) {
    auto s = std::make_unique<stmt>();
    s->type = k;
    s->line = line;
    return s;
  }

  // Parses statements until a tag named in `ends` (its name is left to consume), or the
  // end of the template when `ends` is empty. `opened` is the line of the enclosing block.
  body parse_body(std::initializer_list<std::string_view> ends, int opened) {
    body out;
    const nesting_level nested(block_depth_);
    if (nested.deeper_than(max_nesting)) {
      fail(opened, "blocks nest more than " + std::to_string(max_nesting) + " levels deep");
      return out;
    }
    while (!failed()) {
      const token& t = peek();
      if (t.type == token::kind::end) {
        if (ends.size() > 0) fail(opened, "block is never closed: missing {% " + std::string(*ends.begin()) + " %}");
        return out;
      }
      if (t.type == token::kind::text) {
        auto s = new_stmt(stmt::kind::text, t.line);
        s->text = take().text;
        out.push_back(std::move(s));
        continue;
      }
      if (t.type == token::kind::print_begin) {
        ++i_;
        auto s = new_stmt(stmt::kind::print, t.line);
        s->value = parse_expression();
        if (!failed() && peek().type != token::kind::print_end)
          fail(peek().line, "expected '}}', got " + describe(peek()));
        ++i_;
        out.push_back(std::move(s));
        continue;
      }
      // A block tag.
      const token& name = peek(1);
      for (std::string_view end : ends)
        if (name.type == token::kind::name && name.text == end) {
          ++i_;
          return out;
        }
      ++i_;
      if (auto s = parse_statement(ends)) out.push_back(std::move(s));
    }
    return out;
  }

  std::unique_ptr<stmt> parse_statement(std::initializer_list<std::string_view> ends) {
    const token& t = peek();
    if (t.type != token::kind::name) {
      fail(t.line, "expected a tag name after '{%', got " + describe(t));
      return nullptr;
    }
    const std::string tag = take().text;
    if (tag == "if") return parse_if(t.line);
    if (tag == "for") return parse_for(t.line);
    if (tag == "set") return parse_set(t.line);
    if (tag == "macro") return parse_macro(t.line);
    if (tag == "generation") {
      auto s = new_stmt(stmt::kind::generation, t.line);
      expect_block_end();
      s->body = parse_body({"endgeneration"}, t.line);
      finish_end_tag();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      expect_block_end();
      return new_stmt(tag == "break" ? stmt::kind::break_ : stmt::kind::continue_, t.line);
    }
    const bool is_end = tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else";
    if (is_end && ends.size() > 0)
      fail(t.line, "unexpected {% " + tag + " %}, expected {% " + std::string(*ends.begin()) + " %}");
    else if (is_end)
      fail(t.line, "unexpected {% " + tag + " %}");
    else
      fail(t.line, "unknown tag '" + tag + "'");
    return nullptr;
  }

  // After parse_body stopped at an end tag: consume its name and the closing `%}`.
  std::string finish_end_tag() {
    if (failed()) return {};
    const std::string name = take().text;
    expect_block_end();
    return name;
  }

  std::unique_ptr<stmt> parse_if(int line) {
    auto s = new_stmt(stmt::kind::if_, line);
    expr_ptr condition = parse_expression();
    expect_block_end();
    for (;;) {
      body b = parse_body({"endif", "elif", "else"}, line);
      s->branches.emplace_back(std::move(condition), std::move(b));
      if (failed()) return s;
      const std::string end = take().text;
      if (end == "elif") {
        condition = parse_expression();
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (end == "else") {
        s->else_body = parse_body({"endif"}, line);
        finish_end_tag();
      }
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool parenthesized = accept_op("(");
    do names.push_back(expect_name());
    while (!failed() && accept_op(","));
    if (parenthesized) expect_op(")");
    return names;
  }

  std::unique_ptr<stmt> parse_for(int line) {
    auto s = new_stmt(stmt::kind::for_, line);
    s->targets = parse_targets();
    if (!failed() && !accept_name("in")) fail(peek().line, "expected 'in' in for loop, got " + describe(peek()));
    s->value = parse_expression(false);
    if (accept_name("if")) s->condition = parse_expression();
    if (is_name("recursive")) fail(peek().line, "recursive loops are not supported");
    expect_block_end();
    s->body = parse_body({"endfor", "else"}, line);
    if (finish_end_tag() == "else") {
      s->else_body = parse_body({"endfor"}, line);
      finish_end_tag();
    }
    return s;
  }

  std::unique_ptr<stmt> parse_set(int line) {
    auto s = new_stmt(stmt::kind::set, line);
    s->targets = parse_targets();
    if (!failed() && s->targets.size() == 1 && accept_op(".")) s->attribute = expect_name();
    if (accept_op("=")) {
      s->value = parse_expression();
      expect_block_end();
      return s;
    }
    if (!failed() && (s->targets.size() != 1 || !s->attribute.empty() || peek().type != token::kind::block_end))
      fail(peek().line, "expected '=' in set, got " + describe(peek()));
    expect_block_end();
    s->body = parse_body({"endset"}, line);
    finish_end_tag();
    return s;
  }

  std::unique_ptr<stmt> parse_macro(int line) {
    auto s = new_stmt(stmt::kind::macro, line);
    s->name = expect_name();
    expect_op("(");
    while (!failed() && !accept_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (accept_op(")")) break;
      std::string param = expect_name();
      expr_ptr fallback = accept_op("=") ? parse_expression() : nullptr;
      s->params.emplace_back(std::move(param), std::move(fallback));
    }
    expect_block_end();
    s->body = parse_body({"endmacro"}, line);
    finish_end_tag();
    return s;
  }

  // ---- expressions, by jinja2's precedence ----

  expr_ptr node(expr::kind k, int line, std::string name = {}) {
    auto e = std::make_unique<expr>();
    e->type = k;
    e->line = line;
    e->name = std::move(name);
    return e;
  }
  // Makes `child` an operand of `parent`: chains like `a ~ b ~ c` or `x.y.z` deepen the tree
  // without deepening the parser's recursion, so the tree's depth is checked here.
  void adopt(expr& parent, expr_ptr child) {
    deepen(parent, child);
    parent.args.push_back(std::move(child));
  }
  void adopt_keyword(expr& parent, std::string key, expr_ptr child) {
    deepen(parent, child);
    parent.keywords.emplace_back(std::move(key), std::move(child));
  }
  void deepen(expr& parent, const expr_ptr& child) {
    if (!child || child->depth < parent.depth) return;
    parent.depth = child->depth + 1;
    if (parent.depth > max_nesting) fail_too_deep(parent.line);
  }
  void fail_too_deep(int line) {
    fail(line, "expressions nest more than " + std::to_string(max_nesting) + " levels deep");
  }

  expr_ptr binary(std::string op, expr_ptr lhs, expr_ptr rhs) {
    auto e = node(expr::kind::binary, lhs ? lhs->line : 0, std::move(op));
    adopt(*e, std::move(lhs));
    adopt(*e, std::move(rhs));
    return e;
  }

  expr_ptr parse_expression(bool with_ternary = true) {
    const nesting_level nested(expression_depth_);
    if (nested.deeper_than(max_nesting)) {
      fail_too_deep(peek().line);
      return node(expr::kind::literal, peek().line);
    }
    expr_ptr e = parse_or();
    while (with_ternary && !failed() && is_name("if")) {
      auto t = node(expr::kind::ternary, take().line);
      expr_ptr condition = parse_or();
      expr_ptr otherwise = accept_name("else") ? parse_expression() : nullptr;
      adopt(*t, std::move(condition));
      adopt(*t, std::move(e));
      adopt(*t, std::move(otherwise));
      e = std::move(t);
    }
    return e;
  }

  expr_ptr parse_or() {
    expr_ptr e = parse_and();
    while (!failed() && accept_name("or")) e = binary("or", std::move(e), parse_and());
    return e;
  }

  expr_ptr parse_and() {
    expr_ptr e = parse_not();
    while (!failed() && accept_name("and")) e = binary("and", std::move(e), parse_not());
    return e;
  }

  expr_ptr parse_not() {
    if (is_name("not")) {
      auto e = node(expr::kind::unary, take().line, "not");
      const nesting_level nested(expression_depth_);
      if (nested.deeper_than(max_nesting)) {
        fail_too_deep(e->line);
        return e;
      }
      adopt(*e, parse_not());
      return e;
    }
    return parse_compare();
  }

  std::optional<std::string> compare_op() {
    for (std::string_view op : {"==", "!=", "<", ">", "<=", ">="})
      if (accept_op(op)) return std::string(op);
    if (accept_name("in")) return "in";
    if (is_name("not") && is_name("in", 1)) {
      i_ += 2;
      return "not in";
    }
    return std::nullopt;
  }

  expr_ptr parse_compare() {
    expr_ptr e = parse_math1();
    if (failed()) return e;
    if (std::optional<std::string> op = compare_op()) {
      e = binary(*op, std::move(e), parse_math1());
      if (!failed() && compare_op()) fail(peek().line, "chained comparisons are not supported");
    }
    return e;
  }

  expr_ptr parse_math1() {
    expr_ptr e = parse_concat();
    while (!failed() && (is_op("+") || is_op("-"))) {
      std::string op = take().text;
      e = binary(std::move(op), std::move(e), parse_concat());
    }
    return e;
  }

  expr_ptr parse_concat() {
    expr_ptr e = parse_math2();
    while (!failed() && accept_op("~")) e = binary("~", std::move(e), parse_math2());
    return e;
  }

  expr_ptr parse_math2() {
    expr_ptr e = parse_pow();
    while (!failed() && (is_op("*") || is_op("/") || is_op("//") || is_op("%"))) {
      std::string op = take().text;
      e = binary(std::move(op), std::move(e), parse_pow());
    }
    return e;
  }

  expr_ptr parse_pow() {
    expr_ptr e = parse_unary(true);
    while (!failed() && accept_op("**")) e = binary("**", std::move(e), parse_unary(true));
    return e;
  }

  expr_ptr parse_unary(bool with_filter) {
    expr_ptr e;
    if (is_op("-") || is_op("+")) {
      const token& t = take();
      e = node(expr::kind::unary, t.line, t.text);
      const nesting_level nested(expression_depth_);
      if (nested.deeper_than(max_nesting)) {
        fail_too_deep(e->line);
        return e;
      }
      adopt(*e, parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filter ? parse_filters(std::move(e)) : std::move(e);
  }

  expr_ptr parse_primary() {
    const token& t = peek();
    switch (t.type) {
      case token::kind::name: {
        ++i_;
        for (auto [word, v] : {std::pair{"true", value(true)},
                               {"True", value(true)},
                               {"false", value(false)},
                               {"False", value(false)},
                               {"none", value(nullptr)},
                               {"None", value(nullptr)}})
          if (t.text == word) return literal(t.line, v);
        return node(expr::kind::name, t.line, t.text);
      }
      case token::kind::string: {
        std::string s = take().text;
        while (peek().type == token::kind::string) s += take().text;  // 'a' 'b' is 'ab'
        return literal(t.line, value(std::move(s)));
      }
      case token::kind::integer:
        ++i_;
        return literal(t.line, value(t.integer));
      case token::kind::floating:
        ++i_;
        return literal(t.line, value(t.floating));
      case token::kind::op:
        if (t.text == "(") return parse_parenthesized();
        if (t.text == "[") return parse_sequence(expr::kind::list, "]");
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail(t.line, "unexpected " + describe(t));
    return node(expr::kind::literal, t.line);
  }

  expr_ptr literal(int line, value v) {
    auto e = node(expr::kind::literal, line);
    e->literal = std::move(v);
    return e;
  }

  expr_ptr parse_parenthesized() {
    const int line = take().line;
    if (accept_op(")")) return node(expr::kind::list, line);
    expr_ptr e = parse_expression();
    if (!is_op(",")) {
      expect_op(")");
      return e;
    }
    auto tuple = node(expr::kind::list, line);
    adopt(*tuple, std::move(e));
    while (!failed() && accept_op(",") && !is_op(")")) adopt(*tuple, parse_expression());
    expect_op(")");
    return tuple;
  }

  expr_ptr parse_sequence(expr::kind k, std::string_view close) {
    auto e = node(k, take().line);
    while (!failed() && !accept_op(close)) {
      if (!e->args.empty()) {
        expect_op(",");
        if (accept_op(close)) break;
      }
      adopt(*e, parse_expression());
    }
    return e;
  }

  expr_ptr parse_dict() {
    auto e = node(expr::kind::dict, take().line);
    while (!failed() && !accept_op("}")) {
      if (!e->args.empty()) {
        expect_op(",");
        if (accept_op("}")) break;
      }
      adopt(*e, parse_expression());
      expect_op(":");
      adopt(*e, parse_expression());
    }
    return e;
  }

  expr_ptr parse_postfix(expr_ptr e) {
    while (!failed()) {
      if (is_op(".")) {
        const int line = take().line;
        if (peek().type == token::kind::integer) {
          auto item = node(expr::kind::item, line);
          adopt(*item, std::move(e));
          adopt(*item, literal(line, value(take().integer)));
          e = std::move(item);
        } else {
          auto attr = node(expr::kind::attribute, line, expect_name());
          adopt(*attr, std::move(e));
          e = std::move(attr);
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
    return e;
  }

  expr_ptr parse_subscript(expr_ptr target) {
    const int line = take().line;
    expr_ptr bounds[3];
    int colons = 0;
    for (;;) {
      if (!is_op(":") && !is_op("]")) bounds[colons] = parse_expression();
      if (failed() || colons == 2 || !accept_op(":")) break;
      ++colons;
    }
    expect_op("]");
    if (colons == 0) {
      auto item = node(expr::kind::item, line);
      adopt(*item, std::move(target));
      adopt(*item, std::move(bounds[0]));
      if (!failed() && !item->args[1]) fail(line, "empty subscript");
      return item;
    }
    auto slice = node(expr::kind::slice, line);
    adopt(*slice, std::move(target));
    for (expr_ptr& b : bounds) adopt(*slice, std::move(b));
    return slice;
  }

  // Arguments of a call, filter or test: positional first, then name=value.
  void parse_arguments(expr& e) {
    const std::size_t before = e.args.size();  // the callee or operand
    expect_op("(");
    while (!failed() && !accept_op(")")) {
      if (e.args.size() > before || !e.keywords.empty()) {
        expect_op(",");
        if (accept_op(")")) break;
      }
      if (is_op("*") || is_op("**")) {
        fail(peek().line, "argument unpacking (* and **) is not supported");
        return;
      }
      if (peek().type == token::kind::name && is_op("=", 1)) {
        std::string key = take().text;
        ++i_;
        adopt_keyword(e, std::move(key), parse_expression());
      } else if (!e.keywords.empty()) {
        fail(peek().line, "positional argument after a keyword argument");
      } else {
        adopt(e, parse_expression());
      }
    }
  }

  expr_ptr parse_call(expr_ptr callee) {
    auto call = node(expr::kind::call, peek().line);
    adopt(*call, std::move(callee));
    parse_arguments(*call);
    return call;
  }

  expr_ptr parse_filters(expr_ptr e) {
    while (!failed()) {
      if (is_op("|")) {
        const int line = take().line;
        auto f = node(expr::kind::filter, line, expect_name());
        adopt(*f, std::move(e));
        if (is_op("(")) parse_arguments(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        const int line = take().line;
        const bool negated = accept_name("not");
        auto t = node(expr::kind::test, line, expect_name());
        t->negated = negated;
        adopt(*t, std::move(e));
        if (is_op("(")) {
          parse_arguments(*t);
        } else if (starts_test_argument()) {
          adopt(*t, parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
    return e;
  }

  // jinja2 lets a test take one argument without parentheses: `x is divisibleby 3`.
  bool starts_test_argument() const {
    const token& t = peek();
    if (t.type == token::kind::name) return t.text != "else" && t.text != "or" && t.text != "and";
    return t.type == token::kind::string || t.type == token::kind::integer || t.type == token::kind::floating ||
           is_op("[") || is_op("{");
  }

  std::vector<token> t_;
  std::size_t i_ = 0;
  int block_depth_ = 0;
  int expression_depth_ = 0;
  std::optional<error> error_;
};

}  // namespace

result<body> parse(std::string_view source) {
  result<std::vector<token>> tokens = tokenize(source);
  if (!tokens) return tokens.err();
  return parser(std::move(tokens).value()).run();
}

}  // namespace troupe::jinja
