// The synthetic harmony tokenizer of gpt-oss: o200k_harmony's size (201088
// tokens) and its special tokens at their real ids, around the Llama 3.2
// byte-level BPE of the test data (o200k's own ranks are not in it). Ids
// 0..127999 are Llama 3's ordinary pieces and merges; 128000..199997 are
// unreachable filler pieces "[FILLER_<id>]" (normal tokens, as the real
// vocabulary's ordinary ones at those ids); 199998..201087 are the harmony
// control tokens (<|startoftext|> 199998, <|endoftext|> 199999, <|return|>
// 200002, <|constrain|> 200003, <|channel|> 200005, <|start|> 200006,
// <|end|> 200007, <|message|> 200008, <|call|> 200012, <|endofprompt|>
// 200018, the others <|reserved_<id>|>). Split by o200k's pre-tokenizer
// regex (GGUF tokenizer.ggml.pre = gpt-4o, as llama.cpp's converter writes
// for gpt-oss); no BOS is added, EOS is <|return|>, padding <|endoftext|>.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/hf_config.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

constexpr int64_t kHarmonyVocab = 201088;
constexpr int64_t kFirstSpecial = 199998;
constexpr int64_t kStartOfText = 199998, kEndOfText = 199999, kReturn = 200002, kCall = 200012;

struct Named {
  int64_t id;
  const char* text;
};
constexpr Named kNamedSpecials[] = {
    {199998, "<|startoftext|>"}, {199999, "<|endoftext|>"}, {200002, "<|return|>"},
    {200003, "<|constrain|>"},   {200005, "<|channel|>"},   {200006, "<|start|>"},
    {200007, "<|end|>"},         {200008, "<|message|>"},   {200012, "<|call|>"},
    {200018, "<|endofprompt|>"}};

// o200k's split pattern (tiktoken's o200k_base, the gpt-4o pre-tokenizer).
constexpr const char* kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A harmony chat format: <|start|>ROLE<|message|>TEXT<|end|> per message, an
// assistant's earlier reply on the final channel, <|start|>assistant as the
// generation header (auto-detection takes it for harmony).
constexpr const char* kHarmonyTemplate =
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{- '<|start|>assistant<|channel|>final<|message|>' + message['content'] + '<|end|>' -}}"
    "{%- else -%}"
    "{{- '<|start|>' + message['role'] + '<|message|>' + message['content'] + '<|end|>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|start|>assistant' -}}{%- endif -%}";

enum : int32_t { kNormal = 1, kControl = 3 };

std::string special_text(int64_t id) {
  for (const Named& n : kNamedSpecials)
    if (n.id == id) return n.text;
  return cat("<|reserved_", id, "|>");
}

struct HarmonyVocab {
  std::vector<std::string> pieces;  // kHarmonyVocab of them
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // "left right", by rank (Llama 3's)
};

HarmonyVocab build() {
  require(llama3_json());
  const std::string file = llama3_json();
  const nlohmann::json j = read_json_file(file);
  HarmonyVocab v;
  v.pieces.resize(static_cast<size_t>(kHarmonyVocab));
  v.types.assign(static_cast<size_t>(kHarmonyVocab), kNormal);
  std::vector<bool> named(static_cast<size_t>(kFirstSpecial), false);
  const nlohmann::json& vocab = j.at("model").at("vocab");
  OG_CHECK(vocab.is_object(), file, ": model.vocab must be an object");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int64_t id = it->get<int64_t>();
    OG_CHECK(id >= 0 && id < kFirstSpecial, file, ": token id ", id, " does not fit below harmony's special tokens (",
             kFirstSpecial, ")");
    v.pieces[static_cast<size_t>(id)] = it.key();
    named[static_cast<size_t>(id)] = true;
  }
  for (int64_t id = 0; id < kFirstSpecial; ++id)
    if (!named[static_cast<size_t>(id)]) v.pieces[static_cast<size_t>(id)] = cat("[FILLER_", id, "]");
  for (int64_t id = kFirstSpecial; id < kHarmonyVocab; ++id) {
    v.pieces[static_cast<size_t>(id)] = special_text(id);
    v.types[static_cast<size_t>(id)] = kControl;
  }
  for (const auto& m : j.at("model").at("merges")) {
    if (m.is_string()) {
      v.merges.push_back(m.get<std::string>());
    } else {
      OG_CHECK(m.is_array() && m.size() == 2, file, ": a merge must be \"a b\" or [a, b]");
      v.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
  }
  return v;
}

const HarmonyVocab& harmony_vocab() {
  static const HarmonyVocab v = build();
  return v;
}

}  // namespace

int64_t harmony_vocab_size() { return kHarmonyVocab; }

TokenizerInfo harmony_tokenizer_info() {
  TokenizerInfo t;
  t.bos = kStartOfText;
  t.eos = kReturn;
  t.eos_all = {kReturn, kEndOfText, kCall};  // gpt-oss's generation_config
  t.chat_template = kHarmonyTemplate;
  return t;
}

void add_harmony_gguf_tokenizer(GgufWriter& w) {
  const HarmonyVocab& v = harmony_vocab();
  std::vector<GgufValue> tokens, types, merges;
  tokens.reserve(v.pieces.size());
  types.reserve(v.types.size());
  merges.reserve(v.merges.size());
  for (const std::string& p : v.pieces) tokens.push_back(GgufValue::make_string(p));
  for (int32_t t : v.types) types.push_back(GgufValue::make_i32(t));
  for (const std::string& m : v.merges) merges.push_back(GgufValue::make_string(m));
  w.set("tokenizer.ggml.model", GgufValue::make_string("gpt2"));
  w.set("tokenizer.ggml.pre", GgufValue::make_string("gpt-4o"));
  w.set("tokenizer.ggml.tokens", GgufValue::make_array(GgufType::STRING, std::move(tokens)));
  w.set("tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(types)));
  w.set("tokenizer.ggml.merges", GgufValue::make_array(GgufType::STRING, std::move(merges)));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::make_u32(static_cast<uint32_t>(kStartOfText)));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(static_cast<uint32_t>(kReturn)));
  w.set("tokenizer.ggml.padding_token_id", GgufValue::make_u32(static_cast<uint32_t>(kEndOfText)));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::make_bool(false));
  w.set("tokenizer.chat_template", GgufValue::make_string(kHarmonyTemplate));
}

void write_harmony_hf_tokenizer(const SynthSpec& spec, const std::string& dir) {
  const HarmonyVocab& v = harmony_vocab();
  // Unordered: an ordered_json object of 200000 keys takes quadratic time.
  using Json = nlohmann::json;
  Json vocab = Json::object(), added = Json::array();
  for (int64_t id = 0; id < kFirstSpecial; ++id) vocab[v.pieces[static_cast<size_t>(id)]] = id;
  for (int64_t id = kFirstSpecial; id < kHarmonyVocab; ++id)
    added.push_back({{"id", id}, {"content", v.pieces[static_cast<size_t>(id)]}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  Json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = std::move(added);
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       Json::array({{{"type", "Split"}, {"pattern", {{"Regex", kO200kRegex}}}, {"behavior", "Isolated"}, {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}})}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},  // as the GGUF's gpt-4o pre-tokenizer
                {"vocab", std::move(vocab)},
                {"merges", v.merges}};
  write_text_file(join_path(dir, "tokenizer.json"), j.dump() + "\n");
  nlohmann::ordered_json cfg = {
      {"add_bos_token", false},
      {"add_eos_token", false},
      {"bos_token", special_text(kStartOfText)},
      {"eos_token", special_text(kReturn)},
      {"pad_token", special_text(kEndOfText)},
      {"clean_up_tokenization_spaces", false},
      {"model_max_length", spec.n_ctx},
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"chat_template", kHarmonyTemplate},
  };
  write_text_file(join_path(dir, "tokenizer_config.json"), cfg.dump(2) + "\n");
}

}  // namespace og::synth
