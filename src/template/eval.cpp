// Evaluating expressions: names, literals, containers, attribute and item
// access, slices, calls, filters, tests, operators, comparisons, and/or/not
// and inline if. Every error is tagged with the line of the innermost expression.
#include "template/interp.h"
#include "template/text.h"

namespace og::jinja {

Value Interp::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  try {
    check_stack();
    Value v = eval_inner(e, scope);
    charge_work(kStepWork + (v.is_string() ? v.str().size() : v.is_sequence() ? v.items().size() : 0));
    return v;
  } catch (const LinedError&) {
    throw;
  } catch (const Error& err) {
    throw LinedError(cat("line ", e.line, ": ", err.what()));
  }
}

CallArgs Interp::eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope) {
  CallArgs a;
  for (size_t i = first; i < e.kids.size(); ++i) a.pos.push_back(eval(*e.kids[i], scope));
  for (size_t i = 0; i < e.kw_names.size(); ++i) a.kw.emplace_back(e.kw_names[i], eval(*e.kw_values[i], scope));
  return a;
}

Value Interp::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) fail_undefined(fn);
  if (!fn.is_callable()) fail("'", fn.type_name(), "' object is not callable");
  const Callable& c = fn.fn();
  if (!c.builtin) return c.fn(args);  // a macro: its output carries taint byte by byte
  TaintNewStrings taint(std::max(c.self_taint, taint_of(args)));
  return c.fn(args);
}

uint8_t taint_of(const CallArgs& a) {
  uint8_t k = kTaintNone;
  for (const Value& v : a.pos) k = std::max(k, v.taint_kind());
  for (const auto& kv : a.kw) k = std::max(k, kv.second.taint_kind());
  return k;
}

Value as_text(const Value& v) {
  if (v.is_string()) return v;
  return Value(v.to_str()).tainted_whole(v.taint_kind());
}

Value Interp::eval_call(const Expr& e, const std::shared_ptr<Scope>& scope) {
  Value fn = eval(*e.kids[0], scope);
  CallArgs args = eval_args(e, 1, scope);
  return call(fn, args);
}

// A filter chain: e is the outermost Filter; its innermost target is null or
// an expression; `target` stands for the null one.
Value Interp::eval_filter(const Expr& e, const Value& target, const std::shared_ptr<Scope>& scope) {
  Value v = !e.kids[0] ? target
            : e.kids[0]->kind == ExprKind::Filter ? eval_filter(*e.kids[0], target, scope)
                                                  : eval(*e.kids[0], scope);
  CallArgs args = eval_args(e, 1, scope);
  try {
    return filter(e.name, v, args);
  } catch (const LinedError&) {
    throw;
  } catch (const Error& err) {
    throw LinedError(cat("line ", e.line, ": ", err.what()));
  }
}

Value Interp::eval_compare(const Expr& e, const std::shared_ptr<Scope>& scope) {
  Value left = eval(*e.kids[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.kids[i + 1], scope);
    const std::string& op = e.ops[i];
    bool r;
    if (op == "==") r = equals(left, right);
    else if (op == "!=") r = !equals(left, right);
    else if (op == "in") r = contains(right, left);
    else if (op == "notin") r = !contains(right, left);
    else {
      if (left.is_undefined()) fail_undefined(left);
      if (right.is_undefined()) fail_undefined(right);
      if (op == "<") r = less(left, right);
      else if (op == ">") r = less(right, left);
      else if (op == "<=") r = !less(right, left);
      else r = !less(left, right);
    }
    if (!r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

namespace {

int64_t slice_index(const Value& v) {
  if (v.is_none() || v.is_undefined()) return INT64_MIN;
  if (!v.is_int() && !v.is_bool()) fail("slice indices must be integers or None");
  return v.as_int();
}

template <class Seq>
Seq slice_seq(const Seq& seq, int64_t start, int64_t stop, int64_t step) {
  const int64_t n = static_cast<int64_t>(seq.size());
  if (step == INT64_MIN) step = 1;
  if (step == 0) fail("slice step cannot be zero");
  auto norm = [&](int64_t i, int64_t dflt) {
    if (i == INT64_MIN) return dflt;
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  int64_t b = norm(start, step > 0 ? 0 : n - 1);
  int64_t en = norm(stop, step > 0 ? n : -1);
  Seq out;
  for (int64_t i = b; step > 0 ? i < en : i > en; i += step) out.push_back(seq[static_cast<size_t>(i)]);
  return out;
}

}  // namespace

Value slice_value(const Value& v, const Value& a, const Value& b, const Value& c) {
  int64_t start = slice_index(a), stop = slice_index(b), step = slice_index(c);
  if (v.is_string()) {
    if (!v.taint()) {
      if (is_ascii(v.str())) return Value(slice_seq(v.str(), start, stop, step));
      return Value(utf8_encode(slice_seq(utf8_decode(v.str()), start, stop, step)));
    }
    const std::u32string u = utf8_decode(v.str());
    std::vector<size_t> all(u.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return pick_chars(v, u, slice_seq(all, start, stop, step));
  }
  if (v.is_sequence()) {
    std::vector<Value> out = slice_seq(v.items(), start, stop, step);
    return v.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (v.is_undefined()) fail_undefined(v);
  fail("'", v.type_name(), "' object is not subscriptable");
}

Value Interp::eval_container(const Expr& e, const std::shared_ptr<Scope>& scope) {
  if (e.kind == ExprKind::Dict) {
    Dict d;
    for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
      Value k = eval(*e.kids[i], scope);
      if (k.kind() == Value::Kind::List || k.is_dict()) fail("unhashable type: '", k.type_name(), "'");
      d.set(k, eval(*e.kids[i + 1], scope));
    }
    return Value::dict(std::move(d));
  }
  std::vector<Value> items;
  items.reserve(e.kids.size());
  for (const auto& k : e.kids) items.push_back(eval(*k, scope));
  return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
}

namespace {

Value unary_op(const std::string& op, const Value& v) {
  if (op == "not") return Value(!v.truthy());
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail("bad operand type for unary ", op, ": '", v.type_name(), "'");
  if (op == "+") return v.is_float() ? v : Value(v.as_int());
  if (v.is_float()) return Value(-v.as_float());
  if (v.as_int() == INT64_MIN) fail("integer overflow");
  return Value(-v.as_int());
}

}  // namespace

Value Interp::eval_inner(const Expr& e, const std::shared_ptr<Scope>& scope) {
  switch (e.kind) {
    case ExprKind::Literal: return e.value;
    case ExprKind::Name: return lookup(e.name, scope);
    case ExprKind::List:
    case ExprKind::Tuple:
    case ExprKind::Dict: return eval_container(e, scope);
    case ExprKind::Attr: {
      Value obj = eval(*e.kids[0], scope);
      if (obj.is_undefined()) fail_undefined(obj);
      return get_attr(obj, e.name);
    }
    case ExprKind::Index: {
      Value obj = eval(*e.kids[0], scope);
      Value key = eval(*e.kids[1], scope);
      if (obj.is_undefined()) fail_undefined(obj);
      return get_item(obj, key);
    }
    case ExprKind::Slice: {
      Value obj = eval(*e.kids[0], scope);
      Value parts[3];
      for (int k = 0; k < 3; ++k) parts[k] = e.kids[k + 1] ? eval(*e.kids[k + 1], scope) : Value::none();
      return slice_value(obj, parts[0], parts[1], parts[2]);
    }
    case ExprKind::Call: return eval_call(e, scope);
    case ExprKind::Filter: return eval_filter(e, Value(), scope);
    case ExprKind::Test: {
      Value v = eval(*e.kids[0], scope);
      CallArgs args = eval_args(e, 1, scope);
      return Value(test(e.name, v, args) != e.negate);
    }
    case ExprKind::Unary: return unary_op(e.name, eval(*e.kids[0], scope));
    case ExprKind::Binary:
      return binary_op(e.name, eval(*e.kids[0], scope), eval(*e.kids[1], scope), *this);
    case ExprKind::Compare: return eval_compare(e, scope);
    case ExprKind::And: {
      Value l = eval(*e.kids[0], scope);
      return l.truthy() ? eval(*e.kids[1], scope) : l;
    }
    case ExprKind::Or: {
      Value l = eval(*e.kids[0], scope);
      return l.truthy() ? l : eval(*e.kids[1], scope);
    }
    case ExprKind::CondExpr: {
      if (eval(*e.kids[0], scope).truthy()) return eval(*e.kids[1], scope);
      if (e.kids[2]) return eval(*e.kids[2], scope);
      return Value::undefined(cat("the inline if-expression on line ", e.line,
                                  " evaluated to false and no else section was defined."));
    }
  }
  return Value();
}

}  // namespace og::jinja
