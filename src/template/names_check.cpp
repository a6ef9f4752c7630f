// The compile-time check of filter and test names (see parser.h): jinja2
// refuses a template that names an unknown filter or test outside an `if`.
#include "template/interp.h"
#include "template/parser.h"

namespace og::jinja {
namespace {

void check_expr(const Expr* e, bool soft) {
  if (!e) return;
  soft = soft || e->kind == ExprKind::CondExpr;
  if (!soft && e->kind == ExprKind::Filter && !has_filter(e->name))
    fail("line ", e->line, ": No filter named '", e->name, "'.");
  if (!soft && e->kind == ExprKind::Test && !has_test(e->name))
    fail("line ", e->line, ": No test named '", e->name, "'.");
  for (const auto& k : e->kids) check_expr(k.get(), soft);
  for (const auto& k : e->kw_values) check_expr(k.get(), soft);
}

void check_body(const Body& body, bool soft) {
  for (const auto& s : body) {
    // An if's test and branches are jinja2's "soft" frame; every other block
    // body (for, macro, call, filter, set, with) starts a frame of its own.
    bool inner = s->kind == StmtKind::If ? true : false;
    bool expr_soft = s->kind == StmtKind::If || soft;
    if (s->kind == StmtKind::For) {
      check_expr(s->expr.get(), soft);
      check_expr(s->cond.get(), false);
    } else {
      check_expr(s->expr.get(), expr_soft);
    }
    check_expr(s->filter.get(), soft);
    for (const auto& d : s->defaults) check_expr(d.get(), false);
    check_body(s->body, inner);
    check_body(s->else_body, inner);
  }
}

}  // namespace

void check_names(const Body& body) { check_body(body, false); }

}  // namespace og::jinja
