// Shared by the tokenizer fuzz targets: a loaded tokenizer is exercised on
// fixed texts and on the input's own bytes (encode with and without special
// tokens, decode of every produced id and of a few raw ids, per-token bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace og::fuzz {

inline void exercise_tokenizer(const Tokenizer& tok, const std::string& extra_text) {
  const std::string texts[] = {"Hello world", " <s>[INST] hi</s>\n\n\t", "\xC3\xA9t\xC3\xA9 \xE2\x96\x81 \xF0\x9F\x98\x80",
                               extra_text.substr(0, 256)};
  for (const std::string& t : texts) {
    for (bool parse_special : {false, true}) {
      const std::vector<int32_t> ids = tok.encode(t, true, parse_special);
      for (int32_t id : ids)
        if (id < 0 || id >= tok.n_vocab()) __builtin_trap();  // an id outside the vocabulary
      (void)tok.decode(ids, true);
      (void)tok.decode(ids, false);
    }
  }
  const int32_t n = tok.n_vocab();
  std::vector<int32_t> some;
  for (int32_t id = 0; id < n && id < 64; ++id) some.push_back(id);
  if (n > 0) some.push_back(n - 1);
  for (int32_t id : some) (void)tok.token_bytes(id);
  (void)tok.decode(some, false);
}

}  // namespace og::fuzz
