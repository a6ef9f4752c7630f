// Tokenizer::from_path and the other file-kind loaders: vocab.json + merges.txt,
// SentencePiece tokenizer.model, and the HF config files beside a tokenizer.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <optional>
#include <sentencepiece_processor.h>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/model_source.h"
#include "tokenizer/bpe_presets.h"
#include "tokenizer/loaders.h"
#include "tokenizer/sp_model_check.h"

namespace og {

namespace tok {

using nlohmann::json;

namespace {

// The directory a tokenizer file sits in (its HF config files are beside it).
std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string join(const std::string& dir, const char* name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "bos_token": "<s>" or {"content": "<s>", ...}
std::string token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

// One token id from a config: an integer in int32 range; anything else is an error naming the file and key.
int32_t config_id(const json& v, const std::string& file, const char* key) {
  OG_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX, file, ": ", key,
           " must be a token id (a non-negative integer) or a list of them, got ", json_excerpt(v));
  return static_cast<int32_t>(v.get<int64_t>());
}

// "eos_token_id": 2 | [1, 106] | null
void collect_ids(const json& v, std::vector<int32_t>& out, const std::string& file, const char* key) {
  if (v.is_null()) return;
  if (v.is_array()) {
    for (const json& e : v) out.push_back(config_id(e, file, key));
    return;
  }
  out.push_back(config_id(v, file, key));
}

}  // namespace

std::unique_ptr<PipelineTokenizer> load_vocab_merges(const std::string& vocab_json, const std::string& merges_txt,
                                                     std::string_view pre) {
  PipelineSpec spec;
  const json v = read_json_file(vocab_json);
  OG_CHECK(v.is_object() && !v.empty(), vocab_json, ": vocabulary is not a non-empty JSON object");
  int64_t max_id = 0;
  for (auto it = v.begin(); it != v.end(); ++it) {
    OG_CHECK(it.value().is_number_integer(), vocab_json, ": id of '", it.key(), "' is not an integer");
    const int64_t id = it.value().get<int64_t>();
    OG_CHECK(id >= 0 && id < (1 << 24), vocab_json, ": id ", id, " of '", it.key(), "' is out of range");
    max_id = std::max(max_id, id);
  }
  Vocab::check_span(static_cast<size_t>(max_id) + 1, v.size(), vocab_json);
  spec.vocab.pieces.resize(static_cast<size_t>(max_id) + 1);
  for (auto it = v.begin(); it != v.end(); ++it) spec.vocab.pieces[it.value().get<int64_t>()] = it.key();
  spec.vocab.fill_holes(vocab_json);
  spec.vocab.reindex();
  const std::string merges = read_text_file(merges_txt);
  size_t line_no = 0;
  for (size_t at = 0; at < merges.size();) {
    size_t eol = merges.find('\n', at);
    if (eol == std::string::npos) eol = merges.size();
    std::string_view line(merges.data() + at, eol - at);
    at = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t sp = line.find(' ', 1);
    OG_CHECK(sp != std::string_view::npos, merges_txt, ":", line_no, ": merge is not 'left right'");
    spec.merges.emplace_back(spec.vocab.find(line.substr(0, sp)), spec.vocab.find(line.substr(sp + 1)));
  }
  OG_CHECK(!spec.merges.empty(), merges_txt, ": no merges");
  const BpePreset preset = bpe_preset(pre);
  spec.kind = "vocab.json + merges.txt (byte-level BPE, pre " + std::string(pre) + ")";
  spec.model = ModelKind::kBpe;
  spec.bpe.byte_level = true;
  spec.bpe.ignore_merges = preset.ignore_merges;
  for (const std::string& re : preset.regexes) {
    PreTokStep st;
    st.regex = std::make_shared<Regex>(re);
    spec.pre.push_back(std::move(st));
  }
  spec.dec_byte_level = true;
  for (const char* e : {"<|endoftext|>", "</s>"})
    if (spec.special.eos < 0) spec.special.eos = spec.vocab.find(e);
  return std::make_unique<PipelineTokenizer>(std::move(spec));
}

std::unique_ptr<PipelineTokenizer> load_sentencepiece(const std::string& model_path) {
  OG_CHECK(file_exists(model_path), model_path, ": no such file");
  return load_sentencepiece_bytes(read_text_file(model_path), model_path);
}

std::unique_ptr<PipelineTokenizer> load_sentencepiece_bytes(const std::string& bytes, const std::string& model_path) {
  check_sentencepiece_pieces(bytes, model_path);
  auto sp = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const auto st = sp->LoadFromSerializedProto(bytes);
  OG_CHECK(st.ok(), model_path, ": cannot load SentencePiece model: ", st.ToString());
  PipelineSpec spec;
  const int n = sp->GetPieceSize();
  OG_CHECK(n > 0, model_path, ": SentencePiece model has no pieces");
  for (int id = 0; id < n; ++id) {
    TokenType t = TokenType::kNormal;
    if (sp->IsControl(id)) t = TokenType::kControl;
    else if (sp->IsUnknown(id)) t = TokenType::kUnknown;
    else if (sp->IsUnused(id)) t = TokenType::kUnused;
    else if (sp->IsByte(id)) t = TokenType::kByte;
    spec.vocab.pieces.push_back(sp->IdToPiece(id));
    spec.vocab.types.push_back(t);
    spec.vocab.scores.push_back(sp->GetScore(id));
    if (t == TokenType::kControl && !spec.vocab.pieces.back().empty())
      spec.added.push_back({spec.vocab.pieces.back(), id, true, false, false});
  }
  spec.vocab.reindex();
  spec.kind = "SentencePiece tokenizer.model";
  spec.model = ModelKind::kSentencePiece;
  // The model's own normalizer adds the dummy prefix when "a" encodes as "▁a".
  std::vector<std::string> probe;
  const bool dummy_prefix = sp->Encode("a", &probe).ok() && !probe.empty() && probe[0].rfind("\xE2\x96\x81", 0) == 0;
  spec.sp = std::move(sp);
  spec.dec_byte_fallback = true;
  spec.dec_replace = {{"\xE2\x96\x81", " "}};
  spec.dec_strip_leading_space = dummy_prefix;
  SpecialTokens& s = spec.special;
  s.bos = spec.sp->bos_id();
  s.eos = spec.sp->eos_id();
  s.unk = spec.sp->unk_id();
  s.pad = spec.sp->pad_id();
  s.add_bos = s.bos >= 0;
  if (s.add_bos) spec.prefix_ids = {s.bos};
  return std::make_unique<PipelineTokenizer>(std::move(spec));
}

void apply_hf_configs(PipelineTokenizer& tok, const HfCheckpoint& ck) {
  SpecialTokens& s = tok.mutable_special();
  std::vector<int32_t> extra_eos;
  auto lookup = [&](const json& v, int32_t& id) {
    const std::string text = token_text(v);
    if (text.empty()) return;
    if (auto found = tok.find_piece(text)) id = *found;
  };
  if (ck.tokenizer_config) {
    const json& tc = *ck.tokenizer_config;
    const std::string tc_path = join(ck.dir, "tokenizer_config.json");
    if (tc.contains("bos_token")) lookup(tc["bos_token"], s.bos);
    if (tc.contains("eos_token")) lookup(tc["eos_token"], s.eos);
    if (tc.contains("unk_token")) lookup(tc["unk_token"], s.unk);
    if (tc.contains("pad_token")) lookup(tc["pad_token"], s.pad);
    if (const auto b = json_bool(tc, "add_bos_token", tc_path)) tok.set_add_bos(*b);
    if (const auto e = json_bool(tc, "add_eos_token", tc_path)) tok.set_add_eos(*e);
  }
  const std::pair<const json*, std::string> configs[] = {
      {ck.generation_config ? &*ck.generation_config : nullptr, join(ck.dir, "generation_config.json")},
      {ck.config_path.empty() ? nullptr : &ck.config, ck.config_path}};
  for (const auto& [c, p] : configs) {
    if (c == nullptr) continue;
    if (json_has(*c, "eos_token_id")) collect_ids((*c)["eos_token_id"], extra_eos, p, "eos_token_id");
    if (json_has(*c, "pad_token_id")) {
      const int32_t pad = config_id((*c)["pad_token_id"], p, "pad_token_id");
      if (s.pad < 0) s.pad = pad;
    }
  }
  for (int32_t id : extra_eos)
    OG_CHECK(id >= 0 && id < tok.n_vocab(), ck.dir, ": eos_token_id ", id, " is outside the vocabulary (", tok.n_vocab(),
             " tokens)");
  if (s.eos < 0 && !extra_eos.empty()) s.eos = extra_eos.front();
  tok.finish_stop_ids(extra_eos);
}

void apply_hf_configs(PipelineTokenizer& tok, const std::string& dir) {
  apply_hf_configs(tok, HfCheckpoint::open_files(dir));
}

std::unique_ptr<PipelineTokenizer> load_hf_directory(const HfCheckpoint& ck) {
  std::unique_ptr<PipelineTokenizer> t;
  if (!ck.tokenizer_json_path.empty()) {
    t = load_tokenizer_json(ck.tokenizer_json_path);
  } else if (!ck.vocab_json_path.empty()) {
    t = load_vocab_merges(ck.vocab_json_path, ck.merges_txt_path);
  } else if (!ck.tokenizer_model_path.empty()) {
    t = load_sentencepiece(ck.tokenizer_model_path);
  } else {
    fail(ck.dir, ": no tokenizer.json, vocab.json + merges.txt or tokenizer.model in this directory");
  }
  apply_hf_configs(*t, ck);
  return t;
}

}  // namespace tok

std::unique_ptr<Tokenizer> Tokenizer::from_source(const ModelSource& src) {
  if (const HfCheckpoint* ck = src.hf()) return tok::load_hf_directory(*ck);
  return from_gguf(*src.gguf());
}

std::unique_ptr<Tokenizer> Tokenizer::from_path(const std::string& path) {
  using tok::ends_with;
  if (is_directory(path)) return tok::load_hf_directory(HfCheckpoint::open_files(path));
  OG_CHECK(file_exists(path), path, ": no such file");
  if (ends_with(path, ".gguf")) return from_gguf(*GgufFile::open(path));
  std::unique_ptr<tok::PipelineTokenizer> t;
  if (ends_with(path, ".json")) {
    t = tok::load_tokenizer_json(path);
  } else if (ends_with(path, ".model")) {
    t = tok::load_sentencepiece(path);
  } else {
    fail(path, ": unknown tokenizer file kind (expected .gguf, tokenizer.json, tokenizer.model or a directory)");
  }
  tok::apply_hf_configs(*t, tok::parent_dir(path));
  return t;
}

std::vector<int32_t> Tokenizer::encode_parts(std::span<const TextPart> parts, bool add_special) const {
  std::vector<int32_t> out;
  const SpecialTokens& sp = special();
  if (add_special && sp.add_bos && sp.bos >= 0) out.push_back(sp.bos);
  for (const TextPart& p : parts) {
    std::vector<int32_t> ids = encode(p.text, /*add_special=*/false, p.parse_special);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  if (add_special && sp.add_eos && sp.eos >= 0) out.push_back(sp.eos);
  return out;
}

}  // namespace og
