// The evaluator's state shared by statements, expressions, filters, tests and
// methods: scopes, the output buffer, the render's bounds and its counters.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "template/ast.h"
#include "template/meter.h"
#include "template/template.h"
#include "template/value.h"

namespace og::jinja {

// An og::Error whose message already names its template line.
class LinedError : public Error {
 public:
  using Error::Error;
};

struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  // Name -> position in vars once a scope has many (the root scope holds every
  // chat_template_kwargs key: 50,000 of them made each set and lookup a scan).
  std::map<std::string, size_t, std::less<>> index;
  std::shared_ptr<Scope> parent;
  const Value* lookup(std::string_view name) const;
  void set(const std::string& name, Value v);

 private:
  size_t position(std::string_view name) const;  // in vars; npos: not in this scope
};

enum class Flow { Normal, Break, Continue };

// The C++ stack one render may use for its recursion. The nesting bound
// (Template::parse) times the call-depth bound (RenderOptions::max_depth)
// could need several MiB, more than a 2 MiB thread has: the render stops
// with an og::Error first. Real templates use a few KiB.
constexpr std::ptrdiff_t kMaxRenderStackBytes = 1 << 20;

class Interp {
 public:
  Interp(const RenderOptions& opt, const Value& vars);
  ~Interp();

  TaintedText render(const Body& body);

  // statements (render.cpp)
  Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope);
  Flow exec(const Stmt& s, const std::shared_ptr<Scope>& scope);
  // Renders body into a fresh buffer and returns it, its taint kept.
  Value capture(const Body& body, const std::shared_ptr<Scope>& scope);

  // expressions (eval.cpp)
  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value call(const Value& fn, CallArgs& args);
  Value filter(const std::string& name, const Value& v, CallArgs& args);  // filters.cpp
  bool test(const std::string& name, const Value& v, CallArgs& args);     // tests.cpp

  // bounds
  void count_iteration();
  // og::Error once the render's recursion (expressions inside macro calls
  // inside expressions...) has used kMaxRenderStackBytes of the C++ stack.
  void check_stack() const {
    // The frame's real address (a local's may live on a sanitizer's fake stack).
    const char* here = static_cast<const char*>(__builtin_frame_address(0));
    const auto used = stack_base_ > here ? stack_base_ - here : here - stack_base_;
    if (used > kMaxRenderStackBytes) stack_exceeded();
  }
  void check_size(size_t bytes) const;
  // Every value computed costs its size: a template that loops over huge
  // values fails instead of running for hours (see RenderOptions::max_work).
  void charge_work(size_t units) { meter_.charge(static_cast<int64_t>(units)); }
  void append(std::string_view s);  // template text
  void append_value(const Value& v);  // {{ v }}: its str(), its taint kept
  struct DepthGuard {
    Interp& in;
    explicit DepthGuard(Interp& i);
    ~DepthGuard() { --in.depth_; }
  };

  Value make_namespace(Dict d);
  Value lookup(const std::string& name, const std::shared_ptr<Scope>& scope) const;
  const RenderOptions& options() const { return opt_; }

 private:
  Value eval_inner(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_call(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_container(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_filter(const Expr& e, const Value& target, const std::shared_ptr<Scope>& scope);
  CallArgs eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope);
  Value eval_compare(const Expr& e, const std::shared_ptr<Scope>& scope);
  Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Value make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope, bool is_caller);
  [[noreturn]] void stack_exceeded() const;
  void install_globals();

  const RenderOptions& opt_;
  Meter meter_;  // this thread's meter while the render runs
  std::shared_ptr<Scope> root_;
  std::shared_ptr<Scope> globals_;
  TaintedText* out_ = nullptr;
  int64_t iterations_ = 0;
  size_t held_ = 0;  // bytes in the output buffers that unfinished captures set aside
  int depth_ = 0;
  const char* stack_base_ = nullptr;  // the frame where the render's recursion began (check_stack)
  std::vector<Value> namespace_values_;  // emptied at the end: a namespace may hold itself
};

// Whether a filter / test of that name exists (filters.cpp, tests.cpp).
bool has_filter(const std::string& name);
bool has_test(const std::string& name);

// Python semantics shared by the evaluator and the filters (ops.cpp).
Value binary_op(const std::string& op, const Value& a, const Value& b, const Interp& in);
bool contains(const Value& container, const Value& item);
// Iterating a value as Python's for does (dict: keys; str: characters; undefined: nothing).
std::vector<Value> iterate(const Value& v);
// obj.name and obj[key] as jinja2's sandboxed getattr / getitem (methods.cpp).
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
[[noreturn]] void fail_undefined(const Value& v);
// v[a:b:c] (none: an omitted bound), on strings by code point (eval.cpp).
Value slice_value(const Value& v, const Value& a, const Value& b, const Value& c);
// markupsafe's escape(): & < > " ' as entities (ops.cpp).
std::string html_escape(const std::string& s);
// Python's "fmt % args" (ops.cpp), each field's text tainted as its argument
// (the format's own text as the format's).
Value percent_format(const Value& fmt, const Value& args);
int64_t to_int_arg(const Value& v, const char* what);
// The code points of the string v at `idx` (indexes into u, which is
// utf8_decode(v.str())) as one string, each keeping its bytes' taint.
Value pick_chars(const Value& v, const std::u32string& u, const std::vector<size_t>& idx);
// The byte offset of each code point of s (u = utf8_decode(s)) and s's end;
// empty when s may not be valid UTF-8.
std::vector<size_t> char_offsets(std::string_view s, const std::u32string& u);
// The highest taint kind among a call's arguments (taint.h).
uint8_t taint_of(const CallArgs& a);
// A string value as it is, anything else as its str(), tainted whole with its kind.
Value as_text(const Value& v);

}  // namespace og::jinja
