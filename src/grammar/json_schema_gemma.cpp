// Gemma 4's tool-call argument syntax for the schema compiler
// (JsonSyntax::kGemma4): how its chat template's format_argument writes keys
// and values (strings between <|"|> markers, bare keys, sorted objects).
#include <algorithm>
#include <cctype>

#include "grammar/json_schema_internal.h"

namespace og::grammar::detail {

bool gemma_bare_key(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

std::string gemma_key_text(const std::string& key) {
  return gemma_bare_key(key) ? key : std::string(kGemmaQuote) + key + kGemmaQuote;
}

std::vector<std::string> gemma_key_order(const Json& object) {
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) { return lower(a) < lower(b); });
  return keys;
}

std::optional<std::string> gemma_value_text(const Json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find(kGemmaQuote) != std::string::npos) return std::nullopt;
    return std::string(kGemmaQuote) + s + kGemmaQuote;
  }
  if (v.is_object() || v.is_array()) {
    std::string out = v.is_object() ? "{" : "[";
    bool first = true;
    auto add = [&](const std::string* key, const Json& item) -> bool {
      const std::optional<std::string> t = gemma_value_text(item);
      if (!t) return false;
      if (!first) out += ",";
      first = false;
      if (key) {
        if (key->find(kGemmaQuote) != std::string::npos) return false;
        out += gemma_key_text(*key) + ":";
      }
      out += *t;
      return true;
    };
    if (v.is_object()) {
      for (const std::string& k : gemma_key_order(v))
        if (!add(&k, v.at(k))) return std::nullopt;
    } else {
      for (const Json& item : v)
        if (!add(nullptr, item)) return std::nullopt;
    }
    return out + (v.is_object() ? "}" : "]");
  }
  return v.dump();  // numbers, true, false, null
}

}  // namespace og::grammar::detail
