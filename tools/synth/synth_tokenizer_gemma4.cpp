// The synthetic gemma4 tokenizer: a Gemma-4-style BPE over UTF-8 (GGUF
// tokenizer.ggml.model = gemma4; HF tokenizer.json with a space -> U+2581
// normalizer, newline-run split, byte fallback). Its pieces are Gemma 4's
// special tokens, the 256 <0xNN> bytes, newline runs, and the stories260K
// SentencePiece pieces, each multi-character piece reachable by one merge of
// two earlier pieces; unused pieces pad it to the spec's vocabulary size.
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

enum PieceType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Gemma4Vocab {
  std::vector<std::string> pieces;
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // "left right", by rank
  std::map<std::string, int64_t> ids;
  void add(const std::string& p, int32_t type) {
    ids.emplace(p, static_cast<int64_t>(pieces.size()));
    pieces.push_back(p);
    types.push_back(type);
  }
};

// A Gemma-4-like chat template (the turn markers auto-detection keys on).
constexpr const char* kGemma4Template =
    "{{- bos_token -}}{%- for message in messages -%}{%- set role = 'model' if message['role'] == 'assistant' "
    "else message['role'] -%}{{- '<|turn>' + role + '\\n' -}}{{- message['content'] | trim -}}{{- '<turn|>\\n' "
    "-}}{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}{%- endif -%}";

size_t utf8_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

Gemma4Vocab build_base() {
  Gemma4Vocab v;
  const std::pair<const char*, int32_t> specials[] = {
      {"<pad>", kControl},          {"<eos>", kControl},           {"<bos>", kControl},
      {"<unk>", kUnknown},          {"<mask>", kControl},          {"<|turn>", kControl},
      {"<turn|>", kControl},        {"<|think|>", kControl},       {"<|tool>", kControl},
      {"<tool|>", kControl},        {"<|channel>", kUserDefined},  {"<channel|>", kUserDefined},
      {"<|tool_call>", kUserDefined}, {"<tool_call|>", kUserDefined}, {"<|tool_response>", kUserDefined},
      {"<tool_response|>", kUserDefined}, {"<|\"|>", kUserDefined}};
  for (const auto& [p, t] : specials) v.add(p, t);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.add(buf, kByte);
  }
  v.add("\n", kNormal);
  v.add("\n\n", kNormal);
  v.add("\n\n\n", kNormal);
  v.merges = {"\n \n", "\n\n \n"};
  const std::string stories = join_path(testdata_dir(), "models/stories260K/stories260K.gguf");
  OG_CHECK(file_exists(stories), stories, ": missing (the synthetic gemma4 vocabulary is derived from it; set "
           "OFFGRAPH_TESTDATA to the test data directory)");
  auto src = GgufFile::open(stories);
  const std::vector<std::string> pieces = src->get_string_array("tokenizer.ggml.tokens").value_or(std::vector<std::string>{});
  const std::vector<int64_t> types = src->get_int_array("tokenizer.ggml.token_type").value_or(std::vector<int64_t>{});
  OG_CHECK(!pieces.empty() && types.size() == pieces.size(), stories, ": no usable tokenizer.ggml.tokens/token_type");
  // Single characters first (SentencePiece lists them last), then merged pieces by score order.
  for (size_t i = 0; i < pieces.size(); ++i)
    if (types[i] == kNormal && !pieces[i].empty() && utf8_len(pieces[i][0]) == pieces[i].size() &&
        !v.ids.count(pieces[i]))
      v.add(pieces[i], kNormal);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& p = pieces[i];
    if (types[i] != kNormal || p.empty() || utf8_len(p[0]) == p.size() || v.ids.count(p)) continue;
    for (size_t k = p.size() - 1; k > 0; --k) {  // longest left part first
      if ((static_cast<unsigned char>(p[k]) & 0xC0) == 0x80) continue;  // not a character boundary
      if (v.ids.count(p.substr(0, k)) && v.ids.count(p.substr(k))) {
        v.merges.push_back(p.substr(0, k) + " " + p.substr(k));
        v.add(p, kNormal);
        break;
      }
    }
  }
  return v;
}

const Gemma4Vocab& base_vocab() {
  static const Gemma4Vocab v = build_base();
  return v;
}

// The base vocabulary padded with unused pieces to the spec's size.
Gemma4Vocab vocab_for(const SynthSpec& spec) {
  Gemma4Vocab v = base_vocab();
  const int64_t n = n_vocab(spec);
  const size_t need = v.pieces.size() + (spec.vision ? gemma4_vision_tokens().size() : 0);
  OG_CHECK(n >= static_cast<int64_t>(need), "synthetic model: the gemma4 tokenizer needs a vocabulary of at "
           "least ", need, " tokens, got ", n);
  // --vision: Gemma 4's image tokens right after the base pieces, so that every other id stays.
  if (spec.vision)
    for (const std::string& t : gemma4_vision_tokens())
      if (static_cast<int64_t>(v.pieces.size()) < n) v.add(t, kControl);
  for (int64_t id = static_cast<int64_t>(v.pieces.size()); id < n; ++id) v.add(cat("<unused", id, ">"), kUnused);
  return v;
}

std::string chat_template_of(const SynthSpec& spec) {
  return spec.vision ? gemma4_vision_chat_template() : kGemma4Template;
}

int64_t id_of(const std::string& piece) { return base_vocab().ids.at(piece); }

}  // namespace

int64_t gemma4_base_vocab() { return static_cast<int64_t>(base_vocab().pieces.size()); }

TokenizerInfo gemma4_tokenizer_info(const SynthSpec& spec) {
  TokenizerInfo t;
  t.bos = id_of("<bos>");
  t.eos = id_of("<eos>");
  t.eos_all = {t.eos, id_of("<turn|>")};
  t.chat_template = chat_template_of(spec);
  return t;
}

void add_gemma4_gguf_tokenizer(const SynthSpec& spec, GgufWriter& w) {
  Gemma4Vocab v = vocab_for(spec);
  std::vector<GgufValue> tokens, types, merges;
  for (std::string& p : v.pieces) tokens.push_back(GgufValue::make_string(std::move(p)));
  for (int32_t t : v.types) types.push_back(GgufValue::make_i32(t));
  for (std::string& m : v.merges) merges.push_back(GgufValue::make_string(std::move(m)));
  w.set("tokenizer.ggml.model", GgufValue::make_string("gemma4"));
  w.set("tokenizer.ggml.tokens", GgufValue::make_array(GgufType::STRING, std::move(tokens)));
  w.set("tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(types)));
  w.set("tokenizer.ggml.merges", GgufValue::make_array(GgufType::STRING, std::move(merges)));
  w.set("tokenizer.ggml.unknown_token_id", GgufValue::make_u32(static_cast<uint32_t>(id_of("<unk>"))));
  w.set("tokenizer.ggml.padding_token_id", GgufValue::make_u32(static_cast<uint32_t>(id_of("<pad>"))));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::make_bool(true));
  w.set("tokenizer.ggml.add_space_prefix", GgufValue::make_bool(false));
  w.set("tokenizer.chat_template", GgufValue::make_string(chat_template_of(spec)));
}

void write_gemma4_hf_tokenizer(const SynthSpec& spec, const std::string& dir) {
  const Gemma4Vocab v = vocab_for(spec);
  using Json = nlohmann::ordered_json;
  Json added = Json::array(), vocab = Json::object();
  for (size_t id = 0; id < v.pieces.size(); ++id) {
    vocab[v.pieces[id]] = id;
    const int32_t t = v.types[id];
    if (t == kControl || t == kUnknown || t == kUserDefined)
      added.push_back({{"id", id}, {"content", v.pieces[id]}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", t != kUserDefined}});
  }
  const int64_t bos = id_of("<bos>");
  Json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}};
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\n+"}}}, {"behavior", "Isolated"}, {"invert", false}};
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", Json::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"pair", Json::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                            {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
      {"special_tokens", {{"<bos>", {{"id", "<bos>"}, {"ids", {bos}}, {"tokens", {"<bos>"}}}}}}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", Json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}}})}};
  j["model"] = {{"type", "BPE"},          {"dropout", nullptr},    {"unk_token", "<unk>"},
                {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", false},
                {"byte_fallback", true},  {"ignore_merges", false}, {"vocab", vocab},
                {"merges", v.merges}};
  write_text_file(join_path(dir, "tokenizer.json"), j.dump() + "\n");
  Json cfg = {{"add_bos_token", true},       {"add_eos_token", false},          {"bos_token", "<bos>"},
              {"eos_token", "<eos>"},        {"pad_token", "<pad>"},            {"unk_token", "<unk>"},
              {"model_max_length", spec.n_ctx}, {"tokenizer_class", "GemmaTokenizer"}, {"chat_template", chat_template_of(spec)}};
  write_text_file(join_path(dir, "tokenizer_config.json"), cfg.dump(2) + "\n");
}

}  // namespace og::synth
