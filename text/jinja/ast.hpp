#pragma once
// The parsed template: expressions and statements, each with the line it started on so
// render errors can say where they happened.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.hpp"

namespace troupe::jinja {

struct expr;
using expr_ptr = std::unique_ptr<expr>;

struct expr {
  enum class kind {
    literal,    // value
    name,       // name
    list,       // args: the items (tuples parse as lists too)
    dict,       // args: key, value, key, value, ...
    attribute,  // args[0].name
    item,       // args[0][args[1]]
    slice,      // args[0][args[1]:args[2]:args[3]], any bound may be null
    call,       // args[0](args[1..], keywords)
    filter,     // args[0] | name(args[1..], keywords)
    test,       // args[0] is [not] name
    unary,      // op args[0]: "not", "-", "+"
    binary,     // args[0] op args[1]: arithmetic, comparison, "and", "or", "in", "not in", "~"
    ternary,    // args[1] if args[0] else args[2] (null: undefined)
  };
  kind type = kind::literal;
  int line = 0;
  int depth = 1;  // levels of the tree this node heads; the parser bounds it
  value literal;
  std::string name;      // name, attribute, filter or test name, or the operator
  bool negated = false;  // `is not`
  std::vector<expr_ptr> args;
  std::vector<std::pair<std::string, expr_ptr>> keywords;
};

struct stmt;
using body = std::vector<std::unique_ptr<stmt>>;

struct stmt {
  enum class kind {
    text,   // text
    print,  // {{ value }}
    if_,    // branches, else_body
    for_,   // targets in value [if condition]: body, else_body
    set,    // targets (or attribute of target[0]) = value, or the rendered body
    macro,  // name(params with defaults): body
    break_,
    continue_,
    generation,  // transformers' {% generation %}: renders its body unchanged
  };
  kind type = kind::text;
  int line = 0;
  std::string text;
  expr_ptr value;
  expr_ptr condition;
  std::vector<std::string> targets;
  std::string attribute;  // set: `ns.attribute = ...`
  std::string name;
  std::vector<std::pair<std::string, expr_ptr>> params;  // macro; a null default is required
  std::vector<std::pair<expr_ptr, jinja::body>> branches;
  jinja::body body;
  jinja::body else_body;
};

}  // namespace troupe::jinja
