// The syntax tree of a parsed Jinja template: expressions and statements, each
// with the template line it came from (for error messages).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "template/value.h"

namespace og::jinja {

enum class ExprKind {
  Literal,   // value
  Name,      // name
  List,      // kids: elements
  Tuple,     // kids: elements
  Dict,      // kids: key, value, key, value...
  Attr,      // kids[0].name
  Index,     // kids[0][kids[1]]
  Slice,     // kids[0][kids[1]:kids[2]:kids[3]] (null kids are omitted bounds)
  Call,      // kids[0](kids[1..], kw_names = kw_values)
  Filter,    // kids[0] | name(kids[1..], kw...); kids[0] is null inside {% filter %}
  Test,      // kids[0] is [not] name(kids[1..], kw...); negate
  Unary,     // name in {"-", "+", "not"}; kids[0]
  Binary,    // kids[0] name kids[1]; name in {+ - * / // % ** ~}
  Compare,   // kids[0] ops[0] kids[1] ops[1] kids[2]...
  And,       // kids[0] and kids[1]
  Or,        // kids[0] or kids[1]
  CondExpr,  // kids[1] if kids[0] else kids[2] (kids[2] may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;
  bool negate = false;
  std::vector<std::unique_ptr<Expr>> kids;
  std::vector<std::string> ops;
  std::vector<std::string> kw_names;
  std::vector<std::unique_ptr<Expr>> kw_values;
};
using ExprPtr = std::unique_ptr<Expr>;

enum class StmtKind {
  Text,         // text
  Output,       // {{ expr }}
  If,           // if expr: body else else_body (elif nests an If in else_body)
  For,          // for targets in expr [if cond]: body else else_body
  Set,          // set targets = expr; or set targets[0].attr = expr when attr is set
  SetBlock,     // set targets[0] | filters: body
  Macro,        // macro name(params = defaults): body
  CallBlock,    // call(params) expr: body  (body becomes `caller`)
  FilterBlock,  // filter filters: body
  Scope,        // a body rendered as is ({% generation %})
  With,         // with params[i] = defaults[i], ...: body (in a scope of its own)
  Break,
  Continue,
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;  // Text; macro name; Set's attribute
  ExprPtr expr;      // Output/If/For iterable/Set value/Call expression
  ExprPtr cond;      // For's filter condition
  ExprPtr filter;    // SetBlock/FilterBlock: a Filter chain whose innermost target is null
  std::vector<std::string> targets;
  std::vector<std::string> params;  // Macro/CallBlock parameters
  std::vector<ExprPtr> defaults;    // one per parameter (null: no default)
  Body body;
  Body else_body;
};

}  // namespace og::jinja
