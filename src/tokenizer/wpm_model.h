// WordPiece (BERT) as GGUF `bert` vocabularies store it: word-initial pieces
// carry a U+2581 prefix, continuation pieces are bare. BERT normalization
// (drop controls, NFD + strip accents, lowercase, split punctuation and CJK)
// then greedy longest-match per word; a word with no full match is [UNK].
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace og::tok {

class WpmModel {
 public:
  WpmModel(const Vocab& vocab, int32_t unk, bool lowercase, bool strip_accents);
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  const Vocab& vocab_;
  int32_t unk_;
  bool lowercase_, strip_accents_;
  size_t max_piece_ = 0;
};

}  // namespace og::tok
