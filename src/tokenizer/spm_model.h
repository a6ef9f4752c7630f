// SentencePiece-style BPE driven by piece scores (GGUF `llama` vocabularies):
// adjacent pieces merge best-score first; characters with no piece fall back
// to their <0xNN> byte pieces (or unk).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"
#include "tokenizer/word_cache.h"

namespace og::tok {

class SpmModel {
 public:
  SpmModel(const Vocab& vocab, int32_t unk);
  // Encodes already escaped text (spaces as U+2581) as one word.
  void encode(std::string_view text, std::vector<int32_t>& out) const;
  // The same through the word cache (for short words).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  WordCache cache_;
  int32_t find_usable(std::string_view piece) const;
  const Vocab& vocab_;
  int32_t unk_;
  std::array<int32_t, 256> byte_ids_{};
};

}  // namespace og::tok
