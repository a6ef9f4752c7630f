// Tokenizer::from_gguf: GGUF tokenizer.ggml.* metadata (`llama` SentencePiece
// BPE by scores, `gpt2` byte-level BPE with merges, `gemma4` BPE with merges
// over raw UTF-8, `bert` WordPiece) -> PipelineSpec.
#include <cctype>
#include <memory>

#include "base/error.h"
#include "format/gguf.h"
#include "tokenizer/bpe_presets.h"
#include "tokenizer/pipeline.h"

namespace og {

namespace {

using tok::PipelineSpec;

// A special id key: absent -> fallback; 4294967295 / -1 -> none; otherwise in range.
int32_t special_id(const GgufFile& g, const char* key, int32_t fallback, int32_t n) {
  const auto v = g.get_int(key);
  if (!v) return fallback < n ? fallback : -1;
  if (*v == -1 || *v == 0xFFFFFFFFll) return -1;
  OG_CHECK(*v >= 0 && *v < n, g.source_name(), ": ", key, " = ", *v, " is outside the vocabulary (", n, " tokens)");
  return static_cast<int32_t>(*v);
}

// Fill-in-the-middle markers from the keys llama.cpp's converter writes (the
// older prefix/suffix/middle names too); the pipeline finds them by text when absent.
void read_fim_ids(const GgufFile& g, SpecialTokens& s, int32_t n) {
  s.fim_pre = special_id(g, "tokenizer.ggml.fim_pre_token_id", special_id(g, "tokenizer.ggml.prefix_token_id", -1, n), n);
  s.fim_suf = special_id(g, "tokenizer.ggml.fim_suf_token_id", special_id(g, "tokenizer.ggml.suffix_token_id", -1, n), n);
  s.fim_mid = special_id(g, "tokenizer.ggml.fim_mid_token_id", special_id(g, "tokenizer.ggml.middle_token_id", -1, n), n);
}

// The arrays are read in place (GgufFile::string_array and the others): a
// copy as vector<int64_t> or vector<double> took up to 8 times a hostile
// file's array, on top of the metadata itself.
void read_vocab(const GgufFile& g, PipelineSpec& spec) {
  const GgufArray* tokens = g.string_array("tokenizer.ggml.tokens");
  OG_CHECK(tokens && !tokens->empty(), g.source_name(), ": vocabulary has no tokens (tokenizer.ggml.tokens missing or empty)");
  OG_CHECK(tokens->size() < (1u << 31), g.source_name(), ": tokenizer.ggml.tokens is too large");
  const size_t n = tokens->size();
  auto& v = spec.vocab;
  v.pieces.reserve(n);
  for (size_t i = 0; i < n; ++i) v.pieces.emplace_back(tokens->string_at(i));
  v.types.assign(n, TokenType::kNormal);
  if (const GgufArray* types = g.int_array("tokenizer.ggml.token_type")) {
    OG_CHECK(types->size() == n, g.source_name(), ": tokenizer.ggml.token_type has ", types->size(),
             " entries for ", n, " tokens");
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = types->int_at(i);
      v.types[i] = t >= 1 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kNormal;
    }
  }
  if (const GgufArray* scores = g.number_array("tokenizer.ggml.scores")) {
    OG_CHECK(scores->size() == n, g.source_name(), ": tokenizer.ggml.scores has ", scores->size(), " entries for ",
             n, " tokens");
    v.scores.reserve(n);
    for (size_t i = 0; i < n; ++i) v.scores.push_back(static_cast<decltype(v.scores)::value_type>(scores->number_at(i)));
  }
  v.reindex();
}

// Control and unknown pieces are matched in text only with parse_special;
// user-defined pieces always (they are ordinary added words).
void add_special_pieces(PipelineSpec& spec) {
  const auto& v = spec.vocab;
  for (int32_t id = 0; id < v.size(); ++id) {
    const TokenType t = v.types[id];
    if (v.pieces[id].empty()) continue;
    if (t == TokenType::kControl || t == TokenType::kUnknown)
      spec.added.push_back({v.pieces[id], id, true, false, false});
    else if (t == TokenType::kUserDefined)
      spec.added.push_back({v.pieces[id], id, false, false, false});
  }
}

bool contains_any(const std::string& s, std::initializer_list<const char*> subs) {
  for (const char* sub : subs)
    if (s.find(sub) != std::string::npos) return true;
  return false;
}

void set_strip(PipelineSpec& spec, const char* piece, bool lstrip, bool value) {
  for (tok::AddedToken& a : spec.added)
    if (a.content == piece) (lstrip ? a.lstrip : a.rstrip) = value;
}

// GGUF has no lstrip/rstrip flags; llama.cpp sets them by model name the way
// the HF tokenizers of those models do. Phi-3 (general.name containing "phi-3"
// or "phi3", case-insensitive): every special piece swallows the whitespace on
// its right except <unk>, <s> and <|endoftext|>, so "<|user|>\nHi" is
// <|user|> ▁Hi. Jina v2 / nomic-bert-moe / jina-bert-v3 "<mask>" and
// modern-bert "[MASK]" swallow the whitespace on their left.
void apply_name_strip_rules(const GgufFile& g, PipelineSpec& spec) {
  std::string name = g.get_string("general.name").value_or("");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string pre = g.get_string("tokenizer.ggml.pre").value_or("");
  const std::string arch = g.get_string("general.architecture").value_or("");
  if (contains_any(pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    set_strip(spec, "<mask>", true, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    for (tok::AddedToken& a : spec.added) a.rstrip = true;
    for (const char* p : {"<unk>", "<s>", "<|endoftext|>"}) set_strip(spec, p, false, false);
  } else if (contains_any(name, {"modern-bert"})) {
    set_strip(spec, "[MASK]", true, true);
  }
}

void read_merges(const GgufFile& g, PipelineSpec& spec) {
  const GgufArray* merges = g.string_array("tokenizer.ggml.merges");
  OG_CHECK(merges && !merges->empty(), g.source_name(),
           ": gpt2 (BPE) vocabulary without merges (tokenizer.ggml.merges missing or empty)");
  spec.merges.reserve(merges->size());
  for (size_t k = 0; k < merges->size(); ++k) {
    const std::string_view m = merges->string_at(k);
    // "left right": split at the first space after the first character.
    const size_t sp = m.find(' ', 1);
    if (sp == std::string_view::npos) continue;
    const int32_t l = spec.vocab.find(m.substr(0, sp));
    const int32_t r = spec.vocab.find(m.substr(sp + 1));
    spec.merges.emplace_back(l, r);
  }
}

int32_t find_first(const tok::Vocab& v, std::initializer_list<const char*> texts) {
  for (const char* t : texts) {
    const int32_t id = v.find(t);
    if (id >= 0) return id;
  }
  return -1;
}

// BERT WordPiece: [CLS] text [SEP]; word-initial pieces carry U+2581.
std::unique_ptr<Tokenizer> bert_from_gguf(const GgufFile& g) {
  PipelineSpec spec;
  read_vocab(g, spec);
  const int32_t n = spec.vocab.size();
  spec.kind = "gguf bert (WordPiece)";
  spec.model = tok::ModelKind::kWordPiece;
  add_special_pieces(spec);
  apply_name_strip_rules(g, spec);
  SpecialTokens& s = spec.special;
  s.unk = special_id(g, "tokenizer.ggml.unknown_token_id", 100, n);
  s.bos = special_id(g, "tokenizer.ggml.cls_token_id", special_id(g, "tokenizer.ggml.bos_token_id", 101, n), n);
  s.eos = special_id(g, "tokenizer.ggml.seperator_token_id", special_id(g, "tokenizer.ggml.eos_token_id", 102, n), n);
  s.pad = special_id(g, "tokenizer.ggml.padding_token_id", 0, n);
  spec.unk = s.unk;
  s.add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(true) && s.bos >= 0;
  s.add_eos = g.get_bool("tokenizer.ggml.add_eos_token").value_or(true) && s.eos >= 0;
  if (s.add_bos) spec.prefix_ids = {s.bos};
  if (s.add_eos) spec.suffix_ids = {s.eos};
  spec.dec_replace = {{"\xE2\x96\x81", " "}};
  spec.dec_strip_leading_space = true;
  read_fim_ids(g, spec.special, spec.vocab.size());
  return std::make_unique<tok::PipelineTokenizer>(std::move(spec));
}

// Gemma 4: BPE by merge rank over raw UTF-8 characters (no byte-level
// mapping), spaces escaped to U+2581 with no prefix space, the text split only
// into runs of newlines and runs of anything else, a newline run that is a
// piece emitted whole, <0xNN> byte fallback, and BOS always added (llama.cpp
// forces it for this vocabulary whatever add_bos_token says).
std::unique_ptr<Tokenizer> gemma4_from_gguf(const GgufFile& g) {
  PipelineSpec spec;
  read_vocab(g, spec);
  const int32_t n = spec.vocab.size();
  spec.kind = "gguf gemma4 (BPE over UTF-8)";
  spec.model = tok::ModelKind::kBpe;
  read_merges(g, spec);
  spec.bpe.byte_level = false;
  spec.bpe.byte_fallback = true;
  spec.bpe.whole_newline_runs = true;
  spec.spm_escape_spaces = true;
  tok::PreTokStep st;
  st.regex = std::make_shared<tok::Regex>("[^\n]+|[\n]+");
  spec.pre.push_back(std::move(st));
  spec.dec_byte_fallback = true;
  spec.dec_replace = {{"\xE2\x96\x81", " "}};
  for (int32_t id = 0; id < n; ++id)
    if (tok::parse_byte_piece(spec.vocab.pieces[id]) >= 0 && spec.vocab.types[id] == TokenType::kNormal)
      spec.vocab.types[id] = TokenType::kByte;
  add_special_pieces(spec);
  SpecialTokens& s = spec.special;
  s.bos = special_id(g, "tokenizer.ggml.bos_token_id", find_first(spec.vocab, {"<bos>"}), n);
  s.eos = special_id(g, "tokenizer.ggml.eos_token_id", find_first(spec.vocab, {"<eos>"}), n);
  s.unk = special_id(g, "tokenizer.ggml.unknown_token_id", find_first(spec.vocab, {"<unk>"}), n);
  s.pad = special_id(g, "tokenizer.ggml.padding_token_id", find_first(spec.vocab, {"<pad>"}), n);
  s.eot = special_id(g, "tokenizer.ggml.eot_token_id", find_first(spec.vocab, {"<turn|>"}), n);
  spec.unk = s.unk;
  OG_CHECK(s.bos >= 0, g.source_name(), ": gemma4 vocabulary without a BOS token (<bos> or tokenizer.ggml.bos_token_id)");
  s.add_bos = true;
  s.add_eos = g.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  OG_CHECK(!s.add_eos || s.eos >= 0, g.source_name(), ": add_eos_token is set but there is no EOS token");
  spec.prefix_ids = {s.bos};
  if (s.add_eos) spec.suffix_ids = {s.eos};
  read_fim_ids(g, spec.special, spec.vocab.size());
  return std::make_unique<tok::PipelineTokenizer>(std::move(spec));
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& g) {
  const auto model = g.get_string("tokenizer.ggml.model");
  OG_CHECK(model.has_value(), g.source_name(), ": no tokenizer (tokenizer.ggml.model missing)");
  PipelineSpec spec;
  const bool spm = *model == "llama";
  if (*model == "bert") return bert_from_gguf(g);
  if (*model == "gemma4") return gemma4_from_gguf(g);
  if (!spm && *model != "gpt2")
    fail(g.source_name(), ": unsupported tokenizer.ggml.model '", *model, "' (supported: llama, gpt2, gemma4, bert)");
  read_vocab(g, spec);
  const int32_t n = spec.vocab.size();
  const std::string pre = g.get_string("tokenizer.ggml.pre").value_or("");
  bool add_bos = spm;
  if (spm) {
    spec.kind = "gguf llama (SentencePiece BPE)";
    spec.model = tok::ModelKind::kSpmScores;
    const bool prefix = g.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    spec.spm_add_space_prefix = prefix;
    spec.spm_escape_spaces = true;
    spec.dec_byte_fallback = true;
    spec.dec_replace = {{"\xE2\x96\x81", " "}};
    spec.dec_strip_leading_space = prefix;
    for (int32_t id = 0; id < n; ++id)
      if (tok::parse_byte_piece(spec.vocab.pieces[id]) >= 0 && spec.vocab.types[id] == TokenType::kNormal)
        spec.vocab.types[id] = TokenType::kByte;
  } else {
    const tok::BpePreset preset = tok::bpe_preset(pre);
    spec.kind = "gguf gpt2 (byte-level BPE, pre " + (pre.empty() ? std::string("default") : pre) + ")";
    spec.model = tok::ModelKind::kBpe;
    read_merges(g, spec);
    spec.bpe.byte_level = true;
    spec.bpe.ignore_merges = preset.ignore_merges;
    for (const std::string& re : preset.regexes) {
      tok::PreTokStep st;
      st.regex = std::make_shared<tok::Regex>(re);
      spec.pre.push_back(std::move(st));
    }
    spec.dec_byte_level = true;
    add_bos = preset.add_bos;
  }
  add_special_pieces(spec);
  apply_name_strip_rules(g, spec);

  SpecialTokens& s = spec.special;
  s.bos = special_id(g, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n);
  s.eos = special_id(g, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n);
  s.unk = special_id(g, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n);
  s.pad = special_id(g, "tokenizer.ggml.padding_token_id", -1, n);
  s.eot = special_id(g, "tokenizer.ggml.eot_token_id",
                     find_first(spec.vocab, {"<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<|end_of_turn|>"}), n);
  s.eom = special_id(g, "tokenizer.ggml.eom_token_id", find_first(spec.vocab, {"<|eom_id|>"}), n);
  spec.unk = s.unk;
  s.add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(add_bos);
  s.add_eos = g.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  OG_CHECK(!s.add_bos || s.bos >= 0, g.source_name(), ": add_bos_token is set but there is no BOS token");
  OG_CHECK(!s.add_eos || s.eos >= 0, g.source_name(), ": add_eos_token is set but there is no EOS token");
  if (s.add_bos) spec.prefix_ids = {s.bos};
  if (s.add_eos) spec.suffix_ids = {s.eos};
  read_fim_ids(g, spec.special, spec.vocab.size());
  return std::make_unique<tok::PipelineTokenizer>(std::move(spec));
}

}  // namespace og
