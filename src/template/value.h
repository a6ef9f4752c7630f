// The value type the Jinja engine computes with: Python's values as jinja2 sees
// them (undefined, None, bool, int, float, str, list/tuple, insertion-ordered
// dict, callables, namespace), with Python's truthiness, equality and ordering.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "template/taint.h"

namespace og::jinja {

class Value;

// Arguments of a call: positional first, then keyword arguments in call order.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

// A function a template can call (a global, a macro, a bound method).
struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> fn;
  // A built-in (filter-like) function: the strings it builds from tainted
  // arguments are tainted whole (taint.h). Macros carry taint byte by byte.
  bool builtin = true;
  uint8_t self_taint = kTaintNone;  // a bound method's object's taint kind
};

// Containers nest at most this deep (deeper ones would overflow the stack
// when printed, compared or freed).
constexpr int kMaxValueDepth = 512;

// A dict keeps its keys in insertion order (as Python's does since 3.7).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  int depth = 1;  // of a namespace, whose attributes change after it is made
  uint8_t taint_kind = kTaintNone;  // of a namespace, likewise (see Value::taint_kind)
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(const Value& key, Value v);
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Namespace, Callable };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  Value(bool b);
  Value(int v) : Value(int64_t{v}) {}
  Value(int64_t v);
  Value(double v);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  // dict.keys() / values() / items(): iterable like a list, printed as
  // "dict_keys([...])", not indexable, not JSON serializable (as in Python).
  static Value dict_view(std::vector<Value> items, std::string view_name);
  bool is_dict_view() const { return kind_ == Kind::List && s_ != nullptr; }
  static Value dict(Dict d = {});
  static Value make_namespace(Dict d = {});
  static Value callable(std::string name, std::function<Value(CallArgs&)> fn, bool builtin = true,
                        uint8_t self_taint = kTaintNone);
  // A string marked safe (jinja2's Markup, from |safe or |escape): `+` with a
  // plain string HTML-escapes the plain one, as markupsafe does.
  static Value markup(std::string s);
  // The same value marked safe, its taint kept.
  Value as_markup() const;
  // A string whose bytes in `taint` came from the request (taint.h).
  static Value text(std::string s, TaintSpans taint);
  // This string's bytes [begin, end), their taint kept.
  Value sub(size_t begin, size_t end) const;
  // This value with every byte of its text tainted with at least `kind`
  // (strings; other values come back as they are).
  Value tainted_whole(uint8_t kind) const;

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_sequence() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }
  bool is_markup() const { return kind_ == Kind::String && b_; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(f_) : i_; }
  double as_float() const { return kind_ == Kind::Float ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return s_ ? *s_ : kNoText; }
  const std::vector<Value>& items() const { return *list_; }
  std::vector<Value>& items_mut() { return *list_; }
  const Dict& dict_ref() const { return *dict_; }
  Dict& dict_mut() { return *dict_; }
  const Callable& fn() const { return *fn_; }
  // For an undefined value: why it is undefined ("'x' is undefined").
  const std::string& hint() const { return str(); }

  // The highest taint kind anywhere in this value (a string's bytes, a
  // container's items and keys); kTaintNone: nothing in it came from the request.
  uint8_t taint_kind() const { return kind_ == Kind::Namespace ? dict_->taint_kind : taint_kind_; }
  // A string's tainted spans; null when none of it is tainted.
  const TaintSpans* taint() const { return taint_.get(); }

  // Container nesting: 0 for scalars, 1 + the deepest element for containers.
  int depth() const { return kind_ == Kind::Namespace ? dict_->depth : depth_; }
  // Raises a namespace's depth after `set ns.attr = v`; og::Error past kMaxValueDepth.
  void note_attribute(const Value& v);

  bool truthy() const;
  // Python's type name, for error messages ("dict", "str", "NoneType").
  std::string type_name() const;
  // Python's str(): what {{ value }} prints.
  std::string to_str() const;
  // Python's repr().
  std::string repr() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  uint8_t taint_kind_ = kTaintNone;
  int depth_ = 0;
  // The text of a string, an undefined's hint or a dict view's name; null when
  // empty. Shared: copying a value (a lookup, a loop, a list of it) copies no text.
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<std::vector<Value>> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
  std::shared_ptr<const TaintSpans> taint_;
  inline static const std::string kNoText;
};

// Python's ==: numbers compare by value (True == 1), containers element-wise.
bool equals(const Value& a, const Value& b);
// Python's <; throws og::Error for unorderable types.
bool less(const Value& a, const Value& b);

// JSON to values; objects keep the document's key order. Nesting is bounded.
// taint: every string (and key) of it is tainted whole with this kind.
Value value_from_json(const nlohmann::ordered_json& j, uint8_t taint = kTaintNone);

}  // namespace og::jinja
