// The vocabulary tables every tokenizer shares: id -> piece / type / score and
// piece -> id with string_view lookups (no allocation per query).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace og::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using StringIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct Vocab {
  std::vector<std::string> pieces;  // [n_vocab]
  std::vector<TokenType> types;     // [n_vocab]
  std::vector<float> scores;        // [n_vocab]; empty when the source has none
  StringIndex index;                // piece -> id (first id wins on duplicates)

  int32_t size() const { return static_cast<int32_t>(pieces.size()); }
  int32_t find(std::string_view piece) const {
    auto it = index.find(piece);
    return it == index.end() ? -1 : it->second;
  }
  // Appends a piece; returns its id.
  int32_t add(std::string piece, TokenType type, float score = 0.0f);
  // Rebuilds `index` from `pieces`.
  void reindex();
};

}  // namespace og::tok
