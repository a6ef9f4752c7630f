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
  // For sources that give ids explicitly (tokenizer.json, vocab.json): sizes
  // `types` to `pieces` (kNormal), and makes every id no entry named an
  // unused placeholder piece "[UNUSED_<id>]". check_span first.
  void fill_holes(const std::string& source);
  // Throws og::Error naming `source` when ids [0, n_ids) of which at most
  // n_named name a token would leave more holes than both kMaxHoles and
  // n_named: a file of a few entries must not make a vocabulary of millions
  // (ids go to 2^24), so loaders call this before sizing `pieces` and the
  // work stays in proportion to the file.
  static void check_span(size_t n_ids, size_t n_named, const std::string& source);
  static constexpr size_t kMaxHoles = 65536;
};

}  // namespace og::tok
