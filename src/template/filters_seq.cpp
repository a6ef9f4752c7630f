// The builtin filters on sequences and mappings (length, first, join, map,
// select..., sort, unique, dictsort, batch, min, max, sum, ...), with jinja2
// 3.1's arguments and defaults.
#include <algorithm>

#include "template/filters.h"
#include "template/text.h"

namespace og::jinja {

Value attr_path(const Value& obj, const Value& attribute) {
  if (!attribute.is_string()) return get_item(obj, attribute);
  Value cur = obj;
  const std::string& path = attribute.str();
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (cur.is_undefined()) fail_undefined(cur);
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                 : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

namespace {

Value lower_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(str_lower(v.str()));
  return v;
}

std::vector<Value> sorted(std::vector<Value> items, bool reverse, bool case_sensitive, const Value& attribute) {
  auto key = [&](const Value& v) {
    return lower_key(attribute.is_none() ? v : attr_path(v, attribute), case_sensitive);
  };
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& v : items) keyed.emplace_back(key(v), v);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first) : less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return out;
}

Value min_max(const Value& v, FilterArgs& a, bool want_max) {
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool cs = a.get(0, "case_sensitive", Value(false)).truthy();
  Value attribute = a.get(1, "attribute");
  size_t best = 0;
  auto key = [&](const Value& x) { return lower_key(attribute.is_none() ? x : attr_path(x, attribute), cs); };
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less(best_key, k) : less(k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value f_length(Interp&, const Value& v, FilterArgs&) {
  if (v.is_string()) return Value(static_cast<int64_t>(utf8_length(v.str())));
  if (v.is_sequence()) return Value(static_cast<int64_t>(v.items().size()));
  if (v.is_dict()) return Value(static_cast<int64_t>(v.dict_ref().items.size()));
  if (v.is_undefined()) return Value(int64_t{0});
  fail("object of type '", v.type_name(), "' has no len()");
}

Value f_first(Interp&, const Value& v, FilterArgs&) {
  std::vector<Value> items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(Interp&, const Value& v, FilterArgs&) {
  std::vector<Value> items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_join(Interp& in, const Value& v, FilterArgs& a) {
  Value attribute = a.get(1, "attribute");
  const Value sep = a.get(0, "d", Value(""));
  TaintedText out;
  std::vector<Value> items = iterate(v);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out.add(sep);
    out.add(attribute.is_none() ? items[i] : attr_path(items[i], attribute));
    in.check_size(out.size());
  }
  return out.take();
}

// map(attribute="a.b", default=x) or map("filter", args...); nothing from a falsy value.
Value f_map(Interp& in, const Value& v, FilterArgs& a) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::list();
  CallArgs& raw = a.raw();
  if (a.has(SIZE_MAX, "attribute")) {
    Value attribute = a.get(SIZE_MAX, "attribute");
    bool has_default = a.has(SIZE_MAX, "default");
    Value dflt = a.get(SIZE_MAX, "default");
    for (const Value& x : iterate(v)) {
      Value r = attr_path(x, attribute);
      out.push_back(r.is_undefined() && has_default ? dflt : r);
    }
    return Value::list(std::move(out));
  }
  if (raw.pos.empty() || !raw.pos[0].is_string()) fail("map requires a filter name or attribute=");
  std::string fname = raw.pos[0].str();
  CallArgs rest;
  rest.pos.assign(raw.pos.begin() + 1, raw.pos.end());
  rest.kw = raw.kw;
  for (const Value& x : iterate(v)) {
    CallArgs copy = rest;
    out.push_back(in.filter(fname, x, copy));
  }
  return Value::list(std::move(out));
}

Value f_select(Interp& in, const Value& v, FilterArgs& a) { return select_items(in, v, a.raw(), false, true); }
Value f_reject(Interp& in, const Value& v, FilterArgs& a) { return select_items(in, v, a.raw(), false, false); }
Value f_selectattr(Interp& in, const Value& v, FilterArgs& a) { return select_items(in, v, a.raw(), true, true); }
Value f_rejectattr(Interp& in, const Value& v, FilterArgs& a) { return select_items(in, v, a.raw(), true, false); }

Value f_items(Interp&, const Value& v, FilterArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& kv : v.dict_ref().items) out.push_back(Value::tuple({kv.first, kv.second}));
  return Value::list(std::move(out));
}

Value f_list(Interp&, const Value& v, FilterArgs&) { return Value::list(iterate(v)); }

Value f_unique(Interp&, const Value& v, FilterArgs& a) {
  bool cs = a.flag(0, "case_sensitive");
  Value attribute = a.get(1, "attribute");
  std::vector<Value> out, seen;
  for (const Value& x : iterate(v)) {
    Value k = lower_key(attribute.is_none() ? x : attr_path(x, attribute), cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || equals(s, k);
    if (dup) continue;
    seen.push_back(k);
    out.push_back(x);
  }
  return Value::list(std::move(out));
}

Value f_sort(Interp&, const Value& v, FilterArgs& a) {
  return Value::list(sorted(iterate(v), a.flag(0, "reverse"), a.flag(1, "case_sensitive"), a.get(2, "attribute")));
}

Value f_dictsort(Interp&, const Value& v, FilterArgs& a) {
  if (!v.is_dict()) fail("dictsort: a mapping is required, not ", v.type_name());
  bool cs = a.flag(0, "case_sensitive");
  bool by_value = a.get(1, "by", Value("key")).to_str() == "value";
  bool reverse = a.flag(2, "reverse");
  std::vector<std::pair<Value, Value>> pairs;
  for (const auto& kv : v.dict_ref().items)
    pairs.emplace_back(lower_key(by_value ? kv.second : kv.first, cs), Value::tuple({kv.first, kv.second}));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first) : less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& p : pairs) out.push_back(p.second);
  return Value::list(std::move(out));
}

Value f_reverse(Interp&, const Value& v, FilterArgs&) {
  if (v.is_string()) {
    std::u32string u = utf8_decode(v.str());
    std::reverse(u.begin(), u.end());
    return Value(utf8_encode(u));
  }
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_batch(Interp&, const Value& v, FilterArgs& a) {
  int64_t n = to_int_arg(a.get(0, "linecount"), "batch");
  if (n <= 0) fail("batch: linecount must be positive");
  bool fill = a.has(1, "fill_with");
  Value fill_with = a.get(1, "fill_with");
  std::vector<Value> out, cur;
  for (const Value& x : iterate(v)) {
    cur.push_back(x);
    if (static_cast<int64_t>(cur.size()) == n) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (fill) check_items(static_cast<size_t>(n));  // batch(10**12, fill_with=0) would fill for ever
    while (fill && static_cast<int64_t>(cur.size()) < n) cur.push_back(fill_with);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Value f_min(Interp&, const Value& v, FilterArgs& a) { return min_max(v, a, false); }
Value f_max(Interp&, const Value& v, FilterArgs& a) { return min_max(v, a, true); }

Value f_sum(Interp& in, const Value& v, FilterArgs& a) {
  Value attribute = a.get(0, "attribute");
  Value total = a.get(1, "start", Value(int64_t{0}));
  for (const Value& x : iterate(v))
    total = binary_op("+", total, attribute.is_none() ? x : attr_path(x, attribute), in);
  return total;
}

constexpr FilterEntry kSequenceFilters[] = {
    {"length", f_length}, {"count", f_length},   {"first", f_first},   {"last", f_last},
    {"join", f_join},     {"map", f_map},        {"select", f_select}, {"reject", f_reject},
    {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr}, {"items", f_items}, {"list", f_list},
    {"unique", f_unique}, {"sort", f_sort},      {"dictsort", f_dictsort}, {"reverse", f_reverse},
    {"batch", f_batch},   {"min", f_min},        {"max", f_max},       {"sum", f_sum},
    {nullptr, nullptr}};

}  // namespace

const FilterEntry* sequence_filters() { return kSequenceFilters; }

}  // namespace og::jinja
