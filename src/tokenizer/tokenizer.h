// Tokenizer: text <-> token ids for every supported vocabulary source (GGUF
// `llama` / `gpt2` vocabularies, HF tokenizer.json, vocab.json + merges.txt,
// SentencePiece tokenizer.model). Knows nothing of models.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace og {

class GgufFile;
class ModelSource;  // format/model_source.h

// One piece of a text given to Tokenizer::encode_parts, and whether special
// token texts inside it may become special tokens.
struct TextPart {
  std::string_view text;
  bool parse_special = false;
};

enum class TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct SpecialTokens {
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, pad = -1, unk = -1;  // -1 = none
  // Fill-in-the-middle: prefix, suffix and middle markers (all three or none;
  // GGUF tokenizer.ggml.fim_{pre,suf,mid}_token_id, else known marker texts).
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1;
  bool add_bos = false;
  bool add_eos = false;
  // Every id that ends generation: eos, eot, eom, generation_config's eos list,
  // and tokens whose text is a known end-of-turn marker (<|eot_id|>, <|im_end|>, <end_of_turn>, ...).
  std::vector<int32_t> stop_ids;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From a GGUF file's tokenizer.ggml.* metadata (vocabulary-only files included).
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);
  // From a path: a .gguf file, a tokenizer.json, a tokenizer.model, or a
  // directory holding tokenizer.json | vocab.json + merges.txt | tokenizer.model
  // (with tokenizer_config.json / generation_config.json / config.json beside it
  // for special ids and add-BOS flags).
  static std::unique_ptr<Tokenizer> from_path(const std::string& path);
  // From a model source already open: its GGUF vocabulary, or its HF
  // directory's tokenizer files and configs (read from the source, not reopened).
  static std::unique_ptr<Tokenizer> from_source(const ModelSource& src);

  // add_special: BOS/EOS as the vocabulary's flags (or post-processor) say.
  // parse_special: recognise special/control token texts inside `text`;
  // when false a user's text cannot produce control tokens.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const = 0;
  // Encodes the concatenation of `parts` as one text: fragments run across
  // part boundaries, so ids equal encode(concatenation, add_special, true)
  // whenever no part without parse_special contains a special token's text;
  // a special token is recognised only where its whole text lies inside one
  // part with parse_special (so chat contents cannot inject control tokens
  // while the template's own markers still become them). The default encodes
  // each part on its own; tokenizers that split text into fragments override it.
  virtual std::vector<int32_t> encode_parts(std::span<const TextPart> parts, bool add_special) const;
  // Whole-sequence decode (what streaming must reproduce). skip_special drops
  // control (and unknown) tokens; unused slots (TokenType::kUnused) spell
  // nothing either way, as in llama.cpp. The result is the raw bytes the ids spell:
  // byte-level and byte-fallback ids can spell invalid UTF-8, which is kept as
  // it is (so decode(encode(x)) == x even then); display code sanitizes.
  // An id outside [0, n_vocab) is an og::Error naming it.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = true) const = 0;
  // The bytes token `id` contributes in the middle of a decode (byte-fallback
  // pieces give their single raw byte; SentencePiece ▁ gives a space; control
  // and added tokens give their text, which decode drops when skip_special;
  // unused slots give nothing).
  virtual std::string token_bytes(int32_t id) const = 0;
  // True when the decoder strips one leading space from the first text piece
  // (SentencePiece add-dummy-prefix vocabularies).
  virtual bool strips_leading_space() const = 0;
  // True when `id` is a special/added token that swallows the whitespace on its
  // right (HF `rstrip`; GGUF Phi-3 special pieces). Text encoded in a later call
  // that continues after it (a chat delta) drops its leading whitespace: see encode_chat.
  virtual bool strips_space_after(int32_t id) const {
    (void)id;
    return false;
  }

  virtual int32_t n_vocab() const = 0;
  virtual const std::string& piece(int32_t id) const = 0;  // the vocabulary entry as stored
  virtual TokenType token_type(int32_t id) const = 0;
  virtual std::optional<int32_t> find_piece(std::string_view piece) const = 0;
  virtual const SpecialTokens& special() const = 0;
  virtual std::string kind() const = 0;  // e.g. "gguf llama (SentencePiece BPE)", "tokenizer.json BPE byte-level"
};

}  // namespace og
