// Internal to the filters: argument binding and the two halves of the filter
// table (strings and numbers in filters.cpp, sequences in filters_seq.cpp).
#pragma once

#include <string>

#include "template/interp.h"

namespace og::jinja {

// A filter's arguments, bound by position or by name as jinja2 binds them.
class FilterArgs {
 public:
  explicit FilterArgs(CallArgs& a) : a_(a) {}
  Value get(size_t pos, const char* name, Value dflt = Value::none()) const {
    for (const auto& [k, v] : a_.kw)
      if (k == name) return v;
    return pos < a_.pos.size() ? a_.pos[pos] : dflt;
  }
  bool has(size_t pos, const char* name) const {
    for (const auto& kv : a_.kw)
      if (kv.first == name) return true;
    return pos < a_.pos.size();
  }
  bool flag(size_t pos, const char* name) const { return get(pos, name, Value(false)).truthy(); }
  CallArgs& raw() { return a_; }

 private:
  CallArgs& a_;
};

using FilterFn = Value (*)(Interp& in, const Value& v, FilterArgs& a);
struct FilterEntry {
  const char* name;
  FilterFn fn;
};

// The filters on sequences and mappings (filters_seq.cpp); a null name ends the list.
const FilterEntry* sequence_filters();
// "a.b.0" walked through dict keys, attributes and indexes (jinja2's attribute getter).
Value attr_path(const Value& obj, const Value& attribute);
// select / reject / selectattr / rejectattr (tests.cpp).
Value select_items(Interp& in, const Value& v, CallArgs& args, bool by_attr, bool keep);

}  // namespace og::jinja
