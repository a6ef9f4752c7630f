// The one Tokenizer implementation every source builds: added-token split,
// normalizers, pre-tokenizers, a model (BPE, score SPM, SentencePiece library),
// BOS/EOS post-processing and per-token decode rules. Loaders fill a
// PipelineSpec; the PipelineTokenizer runs it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe_model.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/spm_model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_text.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wpm_model.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace og::tok {

// A token matched verbatim in the text before normalization (HF added tokens,
// GGUF control / user-defined pieces).
struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;  // matched only with parse_special
  bool lstrip = false;   // swallows whitespace on its left
  bool rstrip = false;   // swallows whitespace on its right
};

struct NormalizerStep {
  enum class Kind { kUnicode, kLowercase, kPrepend, kReplace, kStrip };
  Kind kind = Kind::kUnicode;
  NormForm form = NormForm::kNfc;
  std::string a, b;              // Prepend: a; Replace: a -> b (literal)
  std::shared_ptr<Regex> regex;  // Replace with a regex pattern
  bool left = false, right = false;  // Strip
};

struct PreTokStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  enum class Prepend { kAlways, kFirst, kNever };
  Kind kind = Kind::kSplit;
  std::shared_ptr<Regex> regex;  // Split; ByteLevel with use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;     // ByteLevel
  std::string replacement = "\xE2\x96\x81";  // Metaspace
  Prepend prepend = Prepend::kAlways;
  bool split = true;  // Metaspace: each replacement char starts a word
};

enum class ModelKind { kBpe, kSpmScores, kSentencePiece, kWordPiece };

struct PipelineSpec {
  std::string kind;  // for Tokenizer::kind()
  Vocab vocab;
  ModelKind model = ModelKind::kBpe;
  BpeOptions bpe;
  std::vector<std::pair<int32_t, int32_t>> merges;  // BPE, priority order
  int32_t unk = -1;                                 // SPM scores / WordPiece model
  bool wpm_lowercase = true, wpm_strip_accents = true;  // WordPiece (BERT) normalizer
  std::shared_ptr<sentencepiece::SentencePieceProcessor> sp;
  std::vector<AddedToken> added;
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokStep> pre;
  // GGUF llama: a space before the first fragment and after every token
  // fragment, then spaces escaped to U+2581.
  bool spm_add_space_prefix = false;
  bool spm_escape_spaces = false;
  std::vector<int32_t> prefix_ids, suffix_ids;  // added when add_special
  SpecialTokens special;
  // Decode rules, per token: byte-level pieces to bytes, <0xNN> to the byte,
  // literal replacements (e.g. U+2581 -> ' '), and one leading space dropped
  // from the whole text.
  bool dec_byte_level = false;
  bool dec_byte_fallback = false;
  std::vector<std::pair<std::string, std::string>> dec_replace;
  bool dec_strip_leading_space = false;
};

class PipelineTokenizer final : public Tokenizer {
 public:
  explicit PipelineTokenizer(PipelineSpec spec);
  ~PipelineTokenizer() override;

  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override;
  std::vector<int32_t> encode_parts(std::span<const TextPart> parts, bool add_special) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const override;
  std::string token_bytes(int32_t id) const override;
  bool strips_leading_space() const override { return spec_.dec_strip_leading_space; }
  bool strips_space_after(int32_t id) const override;
  int32_t n_vocab() const override { return spec_.vocab.size(); }
  const std::string& piece(int32_t id) const override;
  TokenType token_type(int32_t id) const override;
  std::optional<int32_t> find_piece(std::string_view piece) const override;
  const SpecialTokens& special() const override { return spec_.special; }
  std::string kind() const override { return spec_.kind; }
  const PipelineSpec& spec() const { return spec_; }  // what the loader built (GGUF export reads it)
  // BPE models: the merges in priority order (spec().merges is released after construction).
  std::vector<std::pair<int32_t, int32_t>> bpe_merges() const {
    return bpe_ ? bpe_->merges() : std::vector<std::pair<int32_t, int32_t>>{};
  }

  // Loaders adjust these after construction (tokenizer_config.json etc.).
  SpecialTokens& mutable_special() { return spec_.special; }
  void set_add_bos(bool on);
  void set_add_eos(bool on);
  // Recomputes stop_ids from the special ids, the marker texts and `extra`.
  void finish_stop_ids(const std::vector<int32_t>& extra = {});
  // The fill-in-the-middle markers: the file's ids, else known marker texts.
  void find_fim_ids();

 private:
  // Byte ranges [first, second) of the text inside which special tokens may
  // match (sorted, disjoint).
  using SpecialRanges = std::vector<std::pair<size_t, size_t>>;
  std::vector<int32_t> encode_ranges(std::string_view text, bool add_special, const SpecialRanges& ranges) const;
  void encode_fragment(std::string_view text, bool first, bool after_token, std::vector<int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  std::string normalize(std::string_view text) const;
  void pre_tokenize(std::string& buf, std::vector<Span>& words, bool first) const;
  void build_added_index();
  void build_decode_table();
  // Longest added token starting at text[pos] that may match; nullptr if none.
  // Special ones only when they end at or before `special_end`.
  const AddedToken* match_added(std::string_view text, size_t pos, size_t special_end) const;

  PipelineSpec spec_;
  // SentencePiece-style models see whole fragments; when no piece holds U+2581
  // after another character, a fragment splits exactly before each U+2581
  // that follows a non-U+2581 character, so words can be cached.
  bool split_at_metaspace_ = false;
  std::unique_ptr<BpeModel> bpe_;
  std::unique_ptr<SpmModel> spm_;
  std::unique_ptr<WpmModel> wpm_;
  std::vector<std::string> token_bytes_;                // [n_vocab]
  std::array<std::vector<uint32_t>, 256> added_by_byte_;  // first byte -> added[] indices, longest first
};

// Stop markers every vocabulary may contain.
const std::vector<std::string>& stop_marker_texts();

}  // namespace og::tok
