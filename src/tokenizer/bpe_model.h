// Byte-pair encoding over token ids: merges ranked by priority (byte-level
// GPT-2 style, or character level with byte fallback), with a per-word cache.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/vocab.h"
#include "tokenizer/word_cache.h"

namespace og::tok {

struct BpeOptions {
  bool byte_level = false;     // words are raw bytes; symbols start as the bytes' GPT-2 pieces
  bool byte_fallback = false;  // an unknown character becomes its <0xNN> pieces
  bool ignore_merges = false;  // a word that is a whole piece is emitted as that piece
  bool whole_newline_runs = false;  // a word of only '\n' that is a whole piece is emitted as that piece (gemma4)
  bool fuse_unk = false;       // consecutive unknowns become one unk
  int32_t unk = -1;            // unk id; -1: unknown characters are dropped
};

class BpeModel {
 public:
  // merges: (left id, right id) pairs in priority order; a pair whose
  // concatenation is not a piece is ignored.
  BpeModel(const Vocab& vocab, const std::vector<std::pair<int32_t, int32_t>>& merges, BpeOptions opt);

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  const BpeOptions& options() const { return opt_; }
  // The merges in effect, in priority order (those naming no piece and
  // repeats dropped): what a GGUF tokenizer.ggml.merges list needs.
  std::vector<std::pair<int32_t, int32_t>> merges() const;

 private:
  struct MergeSlot {
    uint64_t key = ~0ull;  // left << 32 | right
    uint32_t rank = 0;
    int32_t result = -1;
  };
  const MergeSlot* find_merge(int32_t left, int32_t right) const;
  void initial_symbols(std::string_view word, std::vector<int32_t>& syms) const;
  void merge_small(std::vector<int32_t>& syms) const;
  void merge_large(std::vector<int32_t>& syms) const;
  void encode_uncached(std::string_view word, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  BpeOptions opt_;
  std::array<int32_t, 256> byte_ids_{};  // byte-level: piece of each byte; else <0xNN> piece
  StringIndex raw_index_;                // byte-level: raw bytes of each piece -> id
  std::vector<MergeSlot> table_;         // open addressing, power-of-two size
  uint64_t mask_ = 0;

  WordCache cache_;
};

}  // namespace og::tok
