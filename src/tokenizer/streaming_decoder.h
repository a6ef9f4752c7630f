// StreamingDecoder: turns token ids into printable text one token at a time.
// Invariant: the concatenation of every push() result and the final flush()
// equals Tokenizer::decode(all ids pushed since the last reset, skip_special).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace og {

class StreamingDecoder {
 public:
  // `tok` must outlive the decoder. skip_special as in Tokenizer::decode.
  explicit StreamingDecoder(const Tokenizer& tok, bool skip_special = true);

  // Adds one token; returns the text that is now complete (whole UTF-8
  // characters only; an incomplete multi-byte sequence, e.g. from byte-fallback
  // pieces or a byte-level token holding part of a character, is held back).
  // An id outside [0, n_vocab) is an og::Error naming it.
  std::string push(int32_t id);

  // End of stream: returns whatever is held (an unfinishable sequence becomes
  // what decode() makes of it). The decoder is then ready for a new stream.
  std::string flush();

  // Starts a new stream whose text is decode() of the ids pushed after it: the
  // SentencePiece leading-space rule applies again to its first text piece.
  // Drops anything held (call flush() first to keep it).
  void reset();

  // Starts a new stream that continues earlier text (e.g. an assistant reply
  // generated after a prompt): no leading space is stripped. Its output is
  // token_bytes()-exact: decode(prev + ids) minus decode(prev) when prev ended
  // on a character boundary.
  void reset_continuation();

  // Whether control tokens (chat markers) are left out of the text; changing
  // it applies to the ids pushed after the call.
  void set_skip_special(bool skip) {
    if (skip != skip_special_) skip_cache_.clear();
    skip_special_ = skip;
  }

  // Bytes currently held back (incomplete UTF-8 at the end of the stream).
  size_t pending_bytes() const { return held_.size(); }

 private:
  std::string take_complete();
  bool skipped(int32_t id);

  const Tokenizer& tok_;
  bool skip_special_;
  bool at_start_ = true;  // no text piece emitted yet in this stream
  std::string held_;      // bytes of an incomplete UTF-8 sequence
  std::vector<int8_t> skip_cache_;  // [n_vocab] -1 unknown, 0 kept, 1 left out by decode()
};

}  // namespace og
