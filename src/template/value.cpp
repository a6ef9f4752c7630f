// Values of the Jinja engine (see value.h): construction, Python truthiness,
// str()/repr(), equality and ordering, and conversion from JSON.
#include "template/value.h"

#include <algorithm>

#include "base/error.h"
#include "template/meter.h"
#include "template/text.h"

namespace og::jinja {

const Value* Dict::find(const Value& key) const {
  for (const auto& kv : items)
    if (equals(kv.first, key)) return &kv.second;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  charge_work(static_cast<int64_t>(items.size()));
  for (const auto& kv : items)
    if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
  return nullptr;
}

void Dict::set(const Value& key, Value v) {
  for (auto& kv : items) {
    if (equals(kv.first, key)) {
      kv.second = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

namespace {

// The text of a value, counted in the render's live memory (meter.h).
std::shared_ptr<const std::string> make_text(std::string s) {
  if (s.empty()) return nullptr;
  const size_t bytes = s.capacity() + sizeof(std::string);
  return track(std::move(s), bytes);
}

}  // namespace

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = make_text(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

namespace {
// A number or bool computed from request text (x|int, x|length, x.find(...))
// carries a field's taint: printed, its digits are request text where they
// could complete a control token, never a content segment of their own.
uint8_t number_taint() { return std::min(TaintNewStrings::current(), kTaintField); }
}  // namespace

Value::Value(bool b) : kind_(Kind::Bool), b_(b), i_(b ? 1 : 0), taint_kind_(number_taint()) {}
Value::Value(int64_t v) : kind_(Kind::Int), i_(v), taint_kind_(number_taint()) {}
Value::Value(double v) : kind_(Kind::Float), f_(v), taint_kind_(number_taint()) {}
Value::Value(std::string s) : kind_(Kind::String), s_(make_text(std::move(s))) {
  if (const uint8_t k = TaintNewStrings::current(); k != kTaintNone && s_) {
    taint_ = track(TaintSpans{{0, s_->size(), k}}, sizeof(TaintSpan));
    taint_kind_ = k;
  }
}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.b_ = true;
  return v;
}

Value Value::as_markup() const {
  Value v = *this;
  v.b_ = v.kind_ == Kind::String;
  return v;
}

Value Value::text(std::string s, TaintSpans taint) {
  Value v(std::move(s));
  if (!v.s_ || taint.empty()) return v;  // no text, or none of it tainted: as built
  v.taint_kind_ = max_kind(taint);
  const size_t bytes = taint.capacity() * sizeof(TaintSpan);
  v.taint_ = track(std::move(taint), bytes);
  return v;
}

Value Value::sub(size_t begin, size_t end) const {
  end = std::min(end, str().size());
  begin = std::min(begin, end);
  if (!taint_) return Value(str().substr(begin, end - begin));
  TaintSpans t;
  add_spans(t, *taint_, begin, end, 0);
  return text(str().substr(begin, end - begin), std::move(t));
}

Value Value::tainted_whole(uint8_t kind) const {
  if (kind_ != Kind::String || kind == kTaintNone || !s_) return *this;
  if (taint_ && taint_->size() == 1 && taint_->front().begin == 0 && taint_->front().end == s_->size() &&
      taint_->front().kind >= kind)
    return *this;
  Value v = text(*s_, TaintSpans{{0, s_->size(), std::max(kind, taint_kind_)}});
  v.b_ = b_;
  return v;
}

namespace {

// A container built during a render costs its items and may not outgrow the
// render's size bound (the builders that can grow a value check before building).
void charge_container(size_t n) {
  charge_work(static_cast<int64_t>(n) * kElementWork);
  check_items(n);
}

int depth_of(const std::vector<Value>& items, uint8_t& taint) {
  charge_container(items.size());
  int d = 0;
  for (const Value& v : items) {
    d = std::max(d, v.depth());
    taint = std::max(taint, v.taint_kind());
  }
  OG_CHECK(d + 1 <= kMaxValueDepth, "values nest deeper than ", kMaxValueDepth, " levels");
  return d + 1;
}

int depth_of(const Dict& dict, uint8_t& taint) {
  charge_container(2 * dict.items.size());
  int d = 0;
  for (const auto& kv : dict.items) {
    d = std::max({d, kv.first.depth(), kv.second.depth()});
    taint = std::max({taint, kv.first.taint_kind(), kv.second.taint_kind()});
  }
  OG_CHECK(d + 1 <= kMaxValueDepth, "values nest deeper than ", kMaxValueDepth, " levels");
  return d + 1;
}

// Bounds recursion in repr() and equals() (a namespace may contain itself).
thread_local int g_walk_depth = 0;
struct WalkGuard {
  WalkGuard() {
    if (++g_walk_depth > 2 * kMaxValueDepth) {
      g_walk_depth = 0;
      fail("value nests too deeply (or contains itself)");
    }
  }
  ~WalkGuard() {
    if (g_walk_depth > 0) --g_walk_depth;
  }
};

}  // namespace

void Value::note_attribute(const Value& v) {
  int d = std::max(dict_->depth, v.depth() + 1);
  OG_CHECK(d <= kMaxValueDepth, "values nest deeper than ", kMaxValueDepth, " levels");
  dict_->depth = d;
  dict_->taint_kind = std::max(dict_->taint_kind, v.taint_kind());
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.depth_ = depth_of(items, v.taint_kind_);
  v.kind_ = Kind::List;
  const size_t bytes = items.size() * kElementBytes;
  v.list_ = track(std::move(items), bytes);
  return v;
}

Value Value::dict_view(std::vector<Value> items, std::string view_name) {
  Value v = list(std::move(items));
  v.s_ = make_text(std::move(view_name));
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.depth_ = depth_of(d, v.taint_kind_);
  d.depth = v.depth_;
  d.taint_kind = v.taint_kind_;
  v.kind_ = Kind::Dict;
  const size_t bytes = 2 * d.items.size() * kElementBytes;
  v.dict_ = track(std::move(d), bytes);
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v = dict(std::move(d));
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn, bool builtin, uint8_t self_taint) {
  Value v;
  v.kind_ = Kind::Callable;
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn), builtin, self_taint});
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return s_ != nullptr;
    case Kind::List:
    case Kind::Tuple: return !list_->empty();
    case Kind::Dict: return !dict_->items.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "?";
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return str();
    default: return repr();
  }
}

namespace {

// The text grows item by item and stops at the render's size bound: a list that
// holds one huge list many times would print gigabytes.
std::string seq_repr(const std::vector<Value>& items, const char* open, const char* close, bool tuple) {
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i].repr();
    check_bytes(out.size());
  }
  if (tuple && items.size() == 1) out += ",";
  return out + close;
}

std::string dict_repr(const Dict& d) {
  std::string out = "{";
  for (size_t i = 0; i < d.items.size(); ++i) {
    if (i) out += ", ";
    out += d.items[i].first.repr();
    out += ": ";
    out += d.items[i].second.repr();
    check_bytes(out.size());
  }
  return out + "}";
}

}  // namespace

std::string Value::repr() const {
  WalkGuard guard;
  charge_work(kElementWork);
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "None";
    case Kind::Bool: return b_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return py_float_repr(f_);
    case Kind::String: charge_work(static_cast<int64_t>(str().size())); return py_str_repr(str());
    case Kind::List:
      if (s_) return *s_ + "(" + seq_repr(*list_, "[", "]", false) + ")";
      return seq_repr(*list_, "[", "]", false);
    case Kind::Tuple: return seq_repr(*list_, "(", ")", true);
    case Kind::Dict: return dict_repr(*dict_);
    case Kind::Namespace: return "<Namespace " + dict_repr(*dict_) + ">";
    case Kind::Callable: return "<function " + fn_->name + ">";
  }
  return "";
}

// Equality and ordering charge every element they visit: `w == w` over a list
// holding one 100000-item list 100 times is 10 million comparisons.
bool equals(const Value& a, const Value& b) {
  WalkGuard guard;
  charge_work(kElementWork);
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.is_sequence() && b.is_sequence()) {
    if (a.kind() != b.kind() || a.is_dict_view() || b.is_dict_view() || a.items().size() != b.items().size())
      return false;
    for (size_t i = 0; i < a.items().size(); ++i)
      if (!equals(a.items()[i], b.items()[i])) return false;
    return true;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String:
      charge_work(static_cast<int64_t>(std::min(a.str().size(), b.str().size())));
      return a.str() == b.str();
    case K::Dict:
    case K::Namespace: {
      const Dict& x = a.dict_ref();
      const Dict& y = b.dict_ref();
      if (&x == &y) return true;
      if (a.is_namespace() || x.items.size() != y.items.size()) return false;
      for (const auto& kv : x.items) {
        const Value* other = y.find(kv.first);
        if (!other || !equals(kv.second, *other)) return false;
      }
      return true;
    }
    case K::Callable: return &a.fn() == &b.fn();
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  WalkGuard guard;
  charge_work(kElementWork);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) {
    charge_work(static_cast<int64_t>(std::min(a.str().size(), b.str().size())));
    return a.str() < b.str();
  }
  if (a.is_sequence() && b.kind() == a.kind()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

namespace {

constexpr int kMaxJsonDepth = 512;

Value from_json(const nlohmann::ordered_json& j, int depth, uint8_t taint) {
  OG_CHECK(depth < kMaxJsonDepth, "template variables nest deeper than ", kMaxJsonDepth, " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: {
      std::string x = j.get<std::string>();
      const size_t n = x.size();
      return taint == kTaintNone ? Value(std::move(x)) : Value::text(std::move(x), {{0, n, taint}});
    }
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x, depth + 1, taint));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        d.items.emplace_back(taint == kTaintNone ? Value(it.key()) : Value::text(it.key(), {{0, it.key().size(), taint}}),
                             from_json(it.value(), depth + 1, taint));
      return Value::dict(std::move(d));
    }
    default: return Value::none();
  }
}

}  // namespace

Value value_from_json(const nlohmann::ordered_json& j, uint8_t taint) { return from_json(j, 0, taint); }

}  // namespace og::jinja
