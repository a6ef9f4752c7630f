// tokenizer_gguf_keys (see gguf_vocab_export.h). SentencePiece-style BPE
// tokenizer.json files carry merges, not scores, while the "llama" vocabulary
// merges the adjacent pair whose joined piece scores highest: the scores are
// then derived from the piece ids (scores_from_ids).
#include "tokenizer/gguf_vocab_export.h"

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/hf_config.h"
#include "tokenizer/bpe_presets.h"
#include "tokenizer/loaders.h"
#include "tokenizer/pipeline.h"

namespace og {
namespace {

using Keys = std::vector<std::pair<std::string, GgufValue>>;

GgufValue strings(const std::vector<std::string>& v) {
  std::vector<GgufValue> a;
  a.reserve(v.size());
  for (const std::string& s : v) a.push_back(GgufValue::make_string(s));
  return GgufValue::make_array(GgufType::STRING, std::move(a));
}

void add_vocab(const tok::PipelineSpec& spec, const std::vector<float>& scores, Keys& k) {
  k.emplace_back("tokenizer.ggml.tokens", strings(spec.vocab.pieces));
  if (!scores.empty()) {
    std::vector<GgufValue> a;
    for (float s : scores) a.push_back(GgufValue::make_f32(s));
    k.emplace_back("tokenizer.ggml.scores", GgufValue::make_array(GgufType::F32, std::move(a)));
  }
  std::vector<GgufValue> types;
  for (TokenType t : spec.vocab.types) types.push_back(GgufValue::make_i32(static_cast<int32_t>(t)));
  k.emplace_back("tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(types)));
}

void add_specials(const Tokenizer& t, Keys& k) {
  const SpecialTokens& s = t.special();
  auto id = [&](const char* key, int32_t v) {
    if (v >= 0) k.emplace_back(key, GgufValue::make_u32(static_cast<uint32_t>(v)));
  };
  id("tokenizer.ggml.bos_token_id", s.bos);
  id("tokenizer.ggml.eos_token_id", s.eos);
  id("tokenizer.ggml.unknown_token_id", s.unk);
  id("tokenizer.ggml.padding_token_id", s.pad);
  id("tokenizer.ggml.eot_token_id", s.eot);
  id("tokenizer.ggml.eom_token_id", s.eom);
  id("tokenizer.ggml.fim_pre_token_id", s.fim_pre);
  id("tokenizer.ggml.fim_suf_token_id", s.fim_suf);
  id("tokenizer.ggml.fim_mid_token_id", s.fim_mid);
  k.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::make_bool(s.add_bos));
  k.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::make_bool(s.add_eos));
}

// Score -id: SentencePiece BPE numbers its pieces in merge order, so the
// lower id wins, as the model's own scores say (stories260K's tok512.model
// holds exactly -id offsets).
std::vector<float> scores_from_ids(const tok::PipelineSpec& spec) {
  std::vector<float> scores(spec.vocab.pieces.size());
  for (size_t id = 0; id < scores.size(); ++id) scores[id] = -static_cast<float>(id);
  return scores;
}

// A SentencePiece-style pipeline adds the U+2581 space prefix when its
// normalizer prepends it or its Metaspace pre-tokenizer does.
bool adds_space_prefix(const tok::PipelineSpec& spec) {
  for (const tok::NormalizerStep& n : spec.normalizers)
    if (n.kind == tok::NormalizerStep::Kind::kPrepend && n.a == "\xE2\x96\x81") return true;
  for (const tok::PreTokStep& p : spec.pre)
    if (p.kind == tok::PreTokStep::Kind::kMetaspace && p.prepend != tok::PreTokStep::Prepend::kNever) return true;
  return spec.model == tok::ModelKind::kSentencePiece && spec.dec_strip_leading_space;
}

void gpt2_keys(const tok::PipelineTokenizer& t, const std::string& where, Keys& k) {
  const tok::PipelineSpec& spec = t.spec();
  std::vector<std::string> regexes;
  for (const tok::PreTokStep& p : spec.pre)
    if (p.regex) regexes.push_back(p.regex->pattern());
  const std::string pre = tok::bpe_pre_name(regexes);
  OG_CHECK(!pre.empty(), where, ": the pre-tokenizer (", regexes.empty() ? std::string("none") : regexes[0],
           ") matches no pre-tokenizer name llama.cpp knows, so a GGUF file cannot reproduce it");
  std::vector<std::string> merges;
  for (const auto& [a, b] : t.bpe_merges()) merges.push_back(spec.vocab.pieces[a] + " " + spec.vocab.pieces[b]);
  OG_CHECK(!merges.empty(), where, ": a byte-level BPE without merges");
  k.emplace_back("tokenizer.ggml.model", GgufValue::make_string("gpt2"));
  k.emplace_back("tokenizer.ggml.pre", GgufValue::make_string(pre));
  add_vocab(spec, {}, k);
  k.emplace_back("tokenizer.ggml.merges", strings(merges));
}

// Gemma 4's vocabulary: tokens and merges under tokenizer.ggml.model =
// gemma4, which readers tokenize by merge rank over raw UTF-8 with spaces as
// U+2581, split at newline runs and BOS always added (gguf_tokenizer.cpp).
void gemma4_keys(const tok::PipelineTokenizer& t, const std::string& where, Keys& k) {
  const tok::PipelineSpec& spec = t.spec();
  std::vector<std::string> merges;
  for (const auto& [a, b] : t.bpe_merges()) merges.push_back(spec.vocab.pieces[a] + " " + spec.vocab.pieces[b]);
  OG_CHECK(!merges.empty(), where, ": a Gemma 4 tokenizer without merges");
  k.emplace_back("tokenizer.ggml.model", GgufValue::make_string("gemma4"));
  add_vocab(spec, {}, k);
  k.emplace_back("tokenizer.ggml.merges", strings(merges));
}

// config.json's model_type ("" when there is none): the vocabulary form of
// a Gemma 4 checkpoint follows the model, as llama.cpp's converter decides.
std::string model_type_of(const HfCheckpoint& ck) {
  const auto it = ck.config.find("model_type");
  return it != ck.config.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::vector<std::pair<std::string, GgufValue>> tokenizer_gguf_keys(const std::string& dir) {
  return tokenizer_gguf_keys(HfCheckpoint::open_files(dir));
}

std::vector<std::pair<std::string, GgufValue>> tokenizer_gguf_keys(const HfCheckpoint& ck) {
  const std::string& dir = ck.dir;
  const std::string tj = dir + "/tokenizer.json", tm = dir + "/tokenizer.model";
  std::unique_ptr<Tokenizer> t = tok::load_hf_directory(ck);
  const auto* p = dynamic_cast<const tok::PipelineTokenizer*>(t.get());
  OG_CHECK(p != nullptr, dir, ": tokenizer of an unexpected kind");
  const tok::PipelineSpec& spec = p->spec();
  Keys k;
  const bool json = !ck.tokenizer_json_path.empty();
  if (spec.model == tok::ModelKind::kBpe && !spec.bpe.byte_level && json && model_type_of(ck).rfind("gemma4", 0) == 0) {
    gemma4_keys(*p, tj, k);
  } else if (spec.model == tok::ModelKind::kBpe && spec.bpe.byte_level) {
    gpt2_keys(*p, json ? tj : dir, k);
  } else if (!ck.tokenizer_model_path.empty()) {
    // The SentencePiece model itself carries the scores; tokenizer.json (if any) supplied the special ids.
    std::unique_ptr<Tokenizer> sp = Tokenizer::from_path(tm);
    const tok::PipelineSpec& s = dynamic_cast<const tok::PipelineTokenizer&>(*sp).spec();
    OG_CHECK(s.vocab.size() == spec.vocab.size(), tm, ": has ", s.vocab.size(), " pieces but ", tj, " has ",
             spec.vocab.size());
    k.emplace_back("tokenizer.ggml.model", GgufValue::make_string("llama"));
    add_vocab(s, s.vocab.scores, k);
    k.emplace_back("tokenizer.ggml.add_space_prefix", GgufValue::make_bool(adds_space_prefix(s)));
  } else if (spec.model == tok::ModelKind::kWordPiece) {
    // BERT: the pieces are already in the GGUF form (hf_tokenizer.cpp); the
    // special ids under the names llama.cpp's converter writes for them.
    k.emplace_back("tokenizer.ggml.model", GgufValue::make_string("bert"));
    k.emplace_back("tokenizer.ggml.pre", GgufValue::make_string("default"));
    add_vocab(spec, {}, k);
    const SpecialTokens& s = t->special();
    if (s.bos >= 0) k.emplace_back("tokenizer.ggml.cls_token_id", GgufValue::make_u32(static_cast<uint32_t>(s.bos)));
    if (s.eos >= 0)
      k.emplace_back("tokenizer.ggml.seperator_token_id", GgufValue::make_u32(static_cast<uint32_t>(s.eos)));
    if (const int32_t mask = spec.vocab.find("[MASK]"); mask >= 0)
      k.emplace_back("tokenizer.ggml.mask_token_id", GgufValue::make_u32(static_cast<uint32_t>(mask)));
  } else if (json && spec.model == tok::ModelKind::kBpe) {
    k.emplace_back("tokenizer.ggml.model", GgufValue::make_string("llama"));
    add_vocab(spec, scores_from_ids(spec), k);
    k.emplace_back("tokenizer.ggml.add_space_prefix", GgufValue::make_bool(adds_space_prefix(spec)));
  } else {
    fail(dir, ": the tokenizer (", t->kind(), ") has no GGUF form (expected a BPE or WordPiece tokenizer.json or tokenizer.model)");
  }
  add_specials(*t, k);
  return k;
}

}  // namespace og
