// Rendering statements: text and output, if, for (with loop.*, else, filters,
// break/continue), set (names, tuples, namespace attributes, blocks), macros,
// call and filter blocks; the render's bounds; and the Template entry points.
#include <algorithm>
#include <ctime>

#include "template/interp.h"
#include "template/parser.h"

namespace og::jinja {

namespace {

// Scopes up to this many names are scanned; larger ones keep an index.
constexpr size_t kIndexFrom = 16;

}  // namespace

size_t Scope::position(std::string_view name) const {
  if (!index.empty()) {
    auto it = index.find(name);
    return it == index.end() ? std::string::npos : it->second;
  }
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i].first == name) return i;
  return std::string::npos;
}

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    size_t i = s->position(name);
    if (i != std::string::npos) return &s->vars[i].second;
  }
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  size_t i = position(name);
  if (i != std::string::npos) {
    vars[i].second = std::move(v);
    return;
  }
  vars.emplace_back(name, std::move(v));
  if (!index.empty()) {
    index.emplace(name, vars.size() - 1);
  } else if (vars.size() > kIndexFrom) {
    for (size_t i = 0; i < vars.size(); ++i) index.emplace(vars[i].first, i);
  }
}

Interp::Interp(const RenderOptions& opt, const Value& vars) : opt_(opt), meter_(opt) {
  globals_ = std::make_shared<Scope>();
  install_globals();
  root_ = std::make_shared<Scope>();
  root_->parent = globals_;
  if (vars.is_dict() || vars.is_namespace())
    for (const auto& kv : vars.dict_ref().items)
      if (kv.first.is_string()) root_->set(kv.first.str(), kv.second);
}

Interp::~Interp() {
  // Namespaces may hold themselves (set ns.x = [ns]); emptying them frees the cycles.
  for (Value& v : namespace_values_) v.dict_mut().items.clear();
}

Value Interp::make_namespace(Dict d) {
  Value v = Value::make_namespace(std::move(d));
  namespace_values_.push_back(v);
  return v;
}

Interp::DepthGuard::DepthGuard(Interp& i) : in(i) {
  if (++in.depth_ > in.opt_.max_depth) {
    --in.depth_;
    fail("maximum recursion depth (", in.opt_.max_depth, ") exceeded");
  }
}

void Interp::count_iteration() {
  if (++iterations_ > opt_.max_loop_iterations)
    fail("more than ", opt_.max_loop_iterations, " loop iterations");
}

void Interp::check_size(size_t bytes) const { meter_.check_bytes(bytes); }

void Interp::append(std::string_view s) {
  check_size(out_->size() + s.size());
  // The buffers of unfinished macro calls count as memory held too (64 of
  // them nested could hold 64 x the value bound).
  meter_.check_memory(held_ + out_->size() + out_->taint_bytes() + s.size());
  out_->append(s);
}

void Interp::append_value(const Value& v) {
  if (!v.is_string()) {
    const std::string s = v.to_str();
    check_size(out_->size() + s.size());
    meter_.check_memory(held_ + out_->size() + out_->taint_bytes() + s.size());
    out_->append(s, v.taint_kind());
    return;
  }
  const size_t n = v.str().size(), spans = v.taint() ? v.taint()->size() : 0;
  check_size(out_->size() + n);
  meter_.check_memory(held_ + out_->size() + out_->taint_bytes() + n + spans * sizeof(TaintSpan));
  out_->add(v);
}

Value Interp::lookup(const std::string& name, const std::shared_ptr<Scope>& scope) const {
  if (const Value* v = scope->lookup(name)) return *v;
  return Value::undefined("'" + name + "' is undefined");
}

void Interp::stack_exceeded() const {
  fail("the template recurses too deeply (more than ", kMaxRenderStackBytes >> 10,
       " KiB of stack: nested expressions inside nested macro calls)");
}

TaintedText Interp::render(const Body& body) {
  stack_base_ = static_cast<const char*>(__builtin_frame_address(0));
  TaintedText out;
  out_ = &out;
  try {
    Flow f = exec_body(body, root_);
    (void)f;
  } catch (const LinedError&) {
    throw;
  } catch (const Error& e) {
    throw LinedError(cat("line 1: ", e.what()));
  }
  return out;
}

Value Interp::capture(const Body& body, const std::shared_ptr<Scope>& scope) {
  TaintedText buf;
  TaintedText* saved = out_;
  out_ = &buf;
  const size_t held = saved->size() + saved->taint_bytes();
  held_ += held;
  try {
    exec_body(body, scope);
  } catch (...) {
    held_ -= held;
    out_ = saved;
    throw;
  }
  held_ -= held;
  out_ = saved;
  return buf.take();
}

Flow Interp::exec_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const auto& s : body) {
    Flow f = exec(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Flow Interp::exec(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  try {
    check_stack();
    charge_work(kStepWork);
    switch (s.kind) {
      case StmtKind::Text: append(s.text); return Flow::Normal;
      case StmtKind::Output: append_value(eval(*s.expr, scope)); return Flow::Normal;
      case StmtKind::If:
        return exec_body(eval(*s.expr, scope).truthy() ? s.body : s.else_body, scope);
      case StmtKind::For: return exec_for(s, scope);
      case StmtKind::Set:
      case StmtKind::SetBlock: exec_set(s, scope); return Flow::Normal;
      case StmtKind::Macro: scope->set(s.text, make_macro(s, scope, false)); return Flow::Normal;
      case StmtKind::CallBlock: {
        Value caller = make_macro(s, scope, true);
        const Expr& c = *s.expr;
        Value fn = eval(*c.kids[0], scope);
        CallArgs args = eval_args(c, 1, scope);
        args.kw.emplace_back("caller", caller);
        append_value(call(fn, args));
        return Flow::Normal;
      }
      case StmtKind::FilterBlock: {
        Value text = capture(s.body, scope);
        append_value(eval_filter(*s.filter, text, scope));
        return Flow::Normal;
      }
      case StmtKind::Scope: return exec_body(s.body, scope);
      case StmtKind::With: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        for (size_t i = 0; i < s.params.size(); ++i) inner->set(s.params[i], eval(*s.defaults[i], scope));
        return exec_body(s.body, inner);
      }
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
    }
  } catch (const LinedError&) {
    throw;
  } catch (const Error& e) {
    throw LinedError(cat("line ", s.line, ": ", e.what()));
  }
  return Flow::Normal;
}

namespace {

void bind_targets(const std::vector<std::string>& targets, const Value& v, Scope& scope) {
  if (targets.size() == 1) {
    scope.set(targets[0], v);
    return;
  }
  if (!v.is_sequence() && !v.is_dict() && !v.is_string()) fail("cannot unpack non-iterable ", v.type_name(), " object");
  std::vector<Value> items = iterate(v);
  if (items.size() != targets.size())
    fail(items.size() < targets.size() ? "not enough" : "too many", " values to unpack (expected ", targets.size(),
         ", got ", items.size(), ")");
  for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], items[i]);
}

}  // namespace

Flow Interp::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  std::vector<Value> all = iterate(eval(*s.expr, scope));
  std::vector<Value> items;
  if (s.cond) {
    for (const Value& v : all) {
      count_iteration();
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      bind_targets(s.targets, v, *probe);
      if (eval(*s.cond, probe).truthy()) items.push_back(v);
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) return exec_body(s.else_body, scope);
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    count_iteration();
    auto it = std::make_shared<Scope>();
    it->parent = scope;
    Dict loop;
    loop.items.reserve(12);
    loop.items.emplace_back(Value("index"), Value(i + 1));
    loop.items.emplace_back(Value("index0"), Value(i));
    loop.items.emplace_back(Value("revindex"), Value(n - i));
    loop.items.emplace_back(Value("revindex0"), Value(n - i - 1));
    loop.items.emplace_back(Value("first"), Value(i == 0));
    loop.items.emplace_back(Value("last"), Value(i == n - 1));
    loop.items.emplace_back(Value("length"), Value(n));
    loop.items.emplace_back(Value("depth"), Value(int64_t{1}));
    loop.items.emplace_back(Value("depth0"), Value(int64_t{0}));
    loop.items.emplace_back(Value("previtem"), i > 0 ? items[i - 1] : Value::undefined("'previtem' is undefined"));
    loop.items.emplace_back(Value("nextitem"), i + 1 < n ? items[i + 1] : Value::undefined("'nextitem' is undefined"));
    loop.items.emplace_back(Value("cycle"), Value::callable("cycle", [i](CallArgs& a) {
      if (a.pos.empty()) fail("no items for cycling given");
      return a.pos[static_cast<size_t>(i) % a.pos.size()];
    }));
    it->set("loop", Value::dict(std::move(loop)));
    bind_targets(s.targets, items[i], *it);
    if (exec_body(s.body, it) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Interp::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  if (s.kind == StmtKind::SetBlock) {
    Value v = capture(s.body, scope);
    if (s.filter) v = eval_filter(*s.filter, v, scope);
    scope->set(s.targets[0], v);
    return;
  }
  Value v = eval(*s.expr, scope);
  if (!s.text.empty()) {
    Value ns = lookup(s.targets[0], scope);
    if (!ns.is_namespace()) fail("cannot assign attribute on non-namespace object");
    ns.note_attribute(v);
    ns.dict_mut().set(Value(s.text), std::move(v));
    return;
  }
  bind_targets(s.targets, v, *scope);
}

// A macro (or a call block's `caller`) as a callable closing over its scope.
Value Interp::make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope, bool is_caller) {
  std::weak_ptr<Scope> weak = scope;
  const Stmt* def = &s;
  std::string name = is_caller ? "caller" : s.text;
  return Value::callable(name, [this, weak, def, name](CallArgs& args) -> Value {
    DepthGuard guard(*this);
    auto local = std::make_shared<Scope>();
    local->parent = weak.lock();
    if (!local->parent) local->parent = root_;
    std::vector<Value> varargs;
    for (size_t i = 0; i < args.pos.size(); ++i) {
      if (i < def->params.size()) local->set(def->params[i], args.pos[i]);
      else varargs.push_back(args.pos[i]);
    }
    Dict kwargs;
    for (auto& [k, v] : args.kw) {
      bool is_param = false;
      for (const auto& p : def->params) is_param = is_param || p == k;
      if (is_param) local->set(k, v);
      else if (k == "caller") local->set(k, v);
      else kwargs.set(Value(k), v);
    }
    for (size_t i = 0; i < def->params.size(); ++i) {
      bool given = false;
      for (const auto& kv : local->vars) given = given || kv.first == def->params[i];
      if (given) continue;
      local->set(def->params[i], def->defaults[i] ? eval(*def->defaults[i], local)
                                                  : Value::undefined("parameter '" + def->params[i] +
                                                                     "' was not provided"));
    }
    local->set("varargs", Value::tuple(std::move(varargs)));
    local->set("kwargs", Value::dict(std::move(kwargs)));
    return capture(def->body, local);
  }, /*builtin=*/false);
}

void Interp::install_globals() {
  globals_->set("range", Value::callable("range", [](CallArgs& a) {
    if (a.pos.empty() || a.pos.size() > 3) fail("range expected 1 to 3 arguments");
    int64_t start = 0, stop, step = 1;
    if (a.pos.size() == 1) {
      stop = to_int_arg(a.pos[0], "range");
    } else {
      start = to_int_arg(a.pos[0], "range");
      stop = to_int_arg(a.pos[1], "range");
      if (a.pos.size() == 3) step = to_int_arg(a.pos[2], "range");
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    // jinja2's sandbox refuses ranges of more than 100000 items.
    constexpr int64_t kMaxRange = 100000;
    std::vector<Value> out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (static_cast<int64_t>(out.size()) >= kMaxRange)
        fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
      out.emplace_back(i);
      if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
    }
    return Value::list(std::move(out));
  }));
  globals_->set("namespace", Value::callable("namespace", [this](CallArgs& a) {
    Dict d;
    for (const Value& p : a.pos) {
      if (!p.is_dict()) fail("namespace() takes a dict as positional argument");
      for (const auto& kv : p.dict_ref().items) d.set(kv.first, kv.second);
    }
    for (auto& [k, v] : a.kw) d.set(Value(k), v);
    return make_namespace(std::move(d));
  }));
  globals_->set("dict", Value::callable("dict", [](CallArgs& a) {
    Dict d;
    for (const Value& p : a.pos) {
      if (!p.is_dict()) fail("dict() takes a dict as positional argument");
      for (const auto& kv : p.dict_ref().items) d.set(kv.first, kv.second);
    }
    for (auto& [k, v] : a.kw) d.set(Value(k), v);
    return Value::dict(std::move(d));
  }));
  globals_->set("raise_exception", Value::callable("raise_exception", [](CallArgs& a) -> Value {
    throw Error(a.pos.empty() ? std::string() : a.pos[0].to_str());
  }));
  globals_->set("strftime_now", Value::callable("strftime_now", [this](CallArgs& a) {
    if (a.pos.empty() || !a.pos[0].is_string()) fail("strftime_now expects a format string");
    std::time_t t = opt_.now_unix >= 0 ? static_cast<std::time_t>(opt_.now_unix) : std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, a.pos[0].str().c_str(), &tm);
    return Value(std::string(buf, n));
  }));
}

Template Template::parse(std::string_view source, int max_nesting) {
  Template t;
  t.body_ = std::make_shared<const Body>(parse_template(source, max_nesting));
  return t;
}

std::string Template::render(const Value& vars, const RenderOptions& options) const {
  Interp in(options, vars);
  return in.render(*body_).take_text();
}

TaintedRender Template::render_tainted(const Value& vars, const RenderOptions& options) const {
  Interp in(options, vars);
  TaintedText t = in.render(*body_);
  TaintedRender r;
  r.taint = t.take_taint();
  r.text = t.take_text();
  return r;
}

}  // namespace og::jinja
