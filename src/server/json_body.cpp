// The bounded JSON parser: nlohmann's lexer and grammar drive a SAX builder of
// our own, which appends each key to its object's ordered_map directly and
// finds a repeated key through a hash index (built once an object passes a
// few keys), where nlohmann's DOM builder searched the object linearly.
#include "server/json_body.h"

#include <memory>
#include <unordered_map>
#include <vector>

#include "server/api_error.h"
#include "server/api_request.h"

namespace og::server {

namespace {

using json = nlohmann::ordered_json;

// Below this many keys an object is searched linearly (no index to allocate).
constexpr size_t kIndexFrom = 16;
// A limit's path is cut here: keys may be long, and the message is one line.
constexpr size_t kMaxPathBytes = 160;

class Builder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(number_integer_t v) { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) { return put(json(v)); }
  bool string(string_t& v) { return put(json(std::move(v))); }
  bool binary(binary_t& v) { return put(json::binary(std::move(v))); }  // never from JSON text
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k);
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // The parser's message ends with the text it last read, which may be long.
    std::string what = e.what();
    if (what.size() > 240) what = what.substr(0, utf8_prefix(what, 240)) + "...";
    out_.error = "is not valid JSON: " + what;
    return false;
  }

  JsonParse take() {
    if (out_.error.empty()) out_.value = std::move(root_);
    return std::move(out_);
  }

 private:
  // One open container. Its parent does not grow while it is open, so the
  // pointers into the parent (node, key) stay valid until it closes.
  struct Frame {
    json* node;
    const std::string* key;  // where it sits in an object parent (else null)
    size_t index;            // where it sits in an array parent
    std::unique_ptr<std::unordered_map<std::string, size_t>> keys;  // object: key -> position, past kIndexFrom
  };

  // The place of the next value: the root, the end of the open array, or the
  // slot key() made in the open object.
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back().node;
    if (top.is_array()) {
      auto& a = top.get_ref<json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }

  bool put(json&& v) {
    place(std::move(v));
    return true;
  }

  bool open(json&& v) {
    const int64_t depth = json_limits().max_depth;
    if (stack_.size() >= static_cast<size_t>(depth))
      return fail("nests deeper than " + std::to_string(depth) + " levels");
    const bool in_array = !stack_.empty() && stack_.back().node->is_array();
    const std::string* key = !stack_.empty() && !in_array ? slot_key_ : nullptr;
    const size_t index = in_array ? stack_.back().node->size() : 0;
    json* node = place(std::move(v));
    stack_.push_back(Frame{node, key, index, nullptr});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  bool fail(std::string message) {
    out_.error = std::move(message);
    out_.limit = true;
    out_.where = path();
    if (!out_.where.empty()) out_.error += " at " + client_text(out_.where, kMaxPathBytes);
    return false;
  }

  // The open containers' place, "tools[0].function" style ("" at the top).
  std::string path() const {
    std::string p;
    for (size_t i = 1; i < stack_.size() && p.size() <= kMaxPathBytes; ++i) {
      const Frame& f = stack_[i];
      if (f.key) {
        if (!p.empty()) p += '.';
        p.append(*f.key, 0, utf8_prefix(*f.key, kMaxPathBytes + 1));  // whole characters only
      } else {
        p += "[" + std::to_string(f.index) + "]";
      }
    }
    return p;
  }

  json root_;
  std::vector<Frame> stack_;
  json* slot_ = nullptr;                   // the value slot of the last key
  const std::string* slot_key_ = nullptr;  // and its key
  JsonParse out_;
};

bool Builder::key(string_t& k) {
  Frame& f = stack_.back();
  // The ordered_map's own operator[] takes keys: index its vector.
  json::object_t::Container& o = f.node->get_ref<json::object_t&>();
  // A repeated key keeps its first place and takes the new value (as nlohmann's parser does).
  size_t at = o.size();
  if (f.keys) {
    if (auto it = f.keys->find(k); it != f.keys->end()) at = it->second;
  } else {
    for (size_t i = 0; i < o.size() && at == o.size(); ++i)
      if (o[i].first == k) at = i;
  }
  if (at == o.size()) {
    const int64_t keys = json_limits().max_keys;
    if (o.size() >= static_cast<size_t>(keys))
      return fail("has an object of more than " + std::to_string(keys) + " keys (the limit per object)");
    if (f.keys) f.keys->emplace(k, o.size());
    o.emplace_back(std::move(k), nullptr);
    if (!f.keys && o.size() == kIndexFrom) {
      f.keys = std::make_unique<std::unordered_map<std::string, size_t>>();
      for (size_t i = 0; i < o.size(); ++i) f.keys->emplace(o[i].first, i);
    }
  }
  slot_ = &o[at].second;
  slot_key_ = &o[at].first;
  return true;
}

static_assert(JsonLimits{}.max_depth == kMaxJsonDepth, "one default depth");
JsonLimits g_limits;

}  // namespace

const JsonLimits& json_limits() { return g_limits; }
void set_json_limits(const JsonLimits& limits) { g_limits = limits; }

JsonParse parse_json_bounded(std::string_view text) {
  Builder b;
  json::sax_parse(text, &b);
  return b.take();
}

}  // namespace og::server
