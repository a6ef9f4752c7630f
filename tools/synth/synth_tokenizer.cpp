// Tokenizer material for synthetic models, taken from ../shared/testdata:
// "stories" (the 512-piece SentencePiece vocabulary of stories260K) and
// "llama3" (the Llama 3.2 byte-level BPE tokenizer.json); "harmony" (gpt-oss)
// builds on the latter in synth_tokenizer_harmony.cpp.
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/hf_config.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

std::string stories_gguf() { return join_path(testdata_dir(), "models/stories260K/stories260K.gguf"); }
std::string stories_hf() { return join_path(testdata_dir(), "models/stories260K-hf"); }

// A Llama-3-style chat format: header tokens around the role, <|eot_id|> after each turn.
constexpr const char* kLlama3Template =
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + "
    "'<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

constexpr int64_t kLlama3Bos = 128000, kLlama3Eos = 128001, kLlama3Eot = 128009;

}  // namespace

std::string llama3_json() { return join_path(testdata_dir(), "vocab/llama3.2-bpe/tokenizer.json"); }

void require(const std::string& path) {
  OG_CHECK(file_exists(path), path, ": missing (synthetic models take their tokenizer from the test data; set "
           "OFFGRAPH_TESTDATA to its directory)");
}

TokenizerInfo tokenizer_info(const SynthSpec& spec) {
  if (spec.tokenizer == "gemma4") return gemma4_tokenizer_info(spec);
  if (spec.tokenizer == "bert") return bert_tokenizer_info();
  if (spec.tokenizer == "harmony") return harmony_tokenizer_info();
  TokenizerInfo t;
  if (spec.tokenizer == "llama3") {
    t.bos = kLlama3Bos;
    t.eos = kLlama3Eos;
    t.eos_all = {kLlama3Eos, kLlama3Eot};
    t.chat_template = kLlama3Template;
  } else {
    n_vocab(spec);  // validates the name
    t.eos_all = {2};
    if (spec.vision && spec.family == Family::kGemma3) t.eos_all = {2, 513};  // </s>, <end_of_turn>
  }
  return t;
}

void add_gguf_tokenizer(const SynthSpec& spec, GgufWriter& w) {
  if (spec.tokenizer == "gemma4") return add_gemma4_gguf_tokenizer(spec, w);
  if (spec.tokenizer == "bert") return add_bert_gguf_tokenizer(w);
  if (spec.tokenizer == "harmony") return add_harmony_gguf_tokenizer(w);
  if (spec.tokenizer == "stories") {
    require(stories_gguf());
    auto src = GgufFile::open(stories_gguf());
    for (const auto& [key, value] : src->metadata()) {
      if (key.rfind("tokenizer.", 0) != 0) continue;
      GgufValue v = value;
      if (key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.scores" || key == "tokenizer.ggml.token_type")
        add_vision_gguf_tokens(spec, key, v);
      w.set(key, v);
    }
    if (spec.vision) {
      if (spec.family == Family::kGemma3)
        w.set("tokenizer.ggml.eot_token_id", GgufValue::make_u32(513));  // <end_of_turn>
      w.set("tokenizer.chat_template", GgufValue::make_string(vision_chat_template(spec)));
    }
    return;
  }
  n_vocab(spec);
  require(llama3_json());
  nlohmann::json j = read_json_file(llama3_json());
  const std::string file = llama3_json();
  const int64_t V = n_vocab(spec);
  std::vector<std::string> tokens(static_cast<size_t>(V));
  std::vector<int32_t> types(static_cast<size_t>(V), 5);  // unused until filled
  const nlohmann::json& vocab = j.at("model").at("vocab");
  OG_CHECK(vocab.is_object(), file, ": model.vocab must be an object");
  auto place = [&](int64_t id, const std::string& piece, int32_t type) {
    OG_CHECK(id >= 0 && id < V, file, ": token id ", id, " is outside the vocabulary of ", V);
    tokens[static_cast<size_t>(id)] = piece;
    types[static_cast<size_t>(id)] = type;
  };
  for (auto it = vocab.begin(); it != vocab.end(); ++it) place(it->get<int64_t>(), it.key(), 1);
  for (const auto& a : j.at("added_tokens"))
    place(a.at("id").get<int64_t>(), a.at("content").get<std::string>(), a.value("special", false) ? 3 : 4);
  for (int64_t id = 0; id < V; ++id)
    if (types[static_cast<size_t>(id)] == 5) tokens[static_cast<size_t>(id)] = cat("[PAD", id, "]");
  if (const ScriptPlan* script = script_plan(spec))
    for (const ScriptPlan::Placed& p : script->placed) place(p.id, p.text, p.special ? 3 : 4);
  std::vector<GgufValue> tok_v, type_v, merge_v;
  tok_v.reserve(tokens.size());
  for (auto& t : tokens) tok_v.push_back(GgufValue::make_string(std::move(t)));
  for (int32_t t : types) type_v.push_back(GgufValue::make_i32(t));
  for (const auto& m : j.at("model").at("merges")) {
    if (m.is_string()) {
      merge_v.push_back(GgufValue::make_string(m.get<std::string>()));
    } else {
      OG_CHECK(m.is_array() && m.size() == 2, file, ": a merge must be \"a b\" or [a, b]");
      merge_v.push_back(GgufValue::make_string(m[0].get<std::string>() + " " + m[1].get<std::string>()));
    }
  }
  w.set("tokenizer.ggml.model", GgufValue::make_string("gpt2"));
  w.set("tokenizer.ggml.pre", GgufValue::make_string("llama-bpe"));
  w.set("tokenizer.ggml.tokens", GgufValue::make_array(GgufType::STRING, std::move(tok_v)));
  w.set("tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(type_v)));
  w.set("tokenizer.ggml.merges", GgufValue::make_array(GgufType::STRING, std::move(merge_v)));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::make_u32(kLlama3Bos));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(kLlama3Eos));
  w.set("tokenizer.ggml.eot_token_id", GgufValue::make_u32(kLlama3Eot));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::make_bool(true));
  w.set("tokenizer.chat_template", GgufValue::make_string(kLlama3Template));
}

void write_hf_tokenizer(const SynthSpec& spec, const std::string& dir) {
  namespace fs = std::filesystem;
  if (spec.tokenizer == "gemma4") return write_gemma4_hf_tokenizer(spec, dir);
  if (spec.tokenizer == "bert") return write_bert_hf_tokenizer(dir);
  if (spec.tokenizer == "harmony") return write_harmony_hf_tokenizer(spec, dir);
  if (spec.tokenizer == "stories") {
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      std::string src = join_path(stories_hf(), f);
      require(src);
      write_text_file(join_path(dir, f), read_text_file(src));
    }
    if (spec.vision) {
      nlohmann::ordered_json tj = nlohmann::ordered_json::parse(read_text_file(join_path(dir, "tokenizer.json")));
      nlohmann::ordered_json tc =
          nlohmann::ordered_json::parse(read_text_file(join_path(dir, "tokenizer_config.json")));
      add_vision_hf_tokens(spec, tj, tc);
      write_text_file(join_path(dir, "tokenizer.json"), tj.dump(2) + "\n");
      write_text_file(join_path(dir, "tokenizer_config.json"), tc.dump(2) + "\n");
      write_text_file(join_path(dir, "chat_template.jinja"), vision_chat_template(spec));
    }
    return;
  }
  n_vocab(spec);
  require(llama3_json());
  if (const ScriptPlan* script = script_plan(spec)) {
    // The script's tokens replace their reserved entries among the added tokens.
    // (Parsed unordered: an ordered_json object of 128000 keys takes quadratic
    // time; the keys' order means nothing to a tokenizer.json reader.)
    nlohmann::json j = read_json_file(llama3_json());
    std::map<int64_t, const ScriptPlan::Placed*> by_id;
    for (const ScriptPlan::Placed& p : script->placed) by_id[p.id] = &p;
    for (auto& a : j.at("added_tokens")) {
      auto it = by_id.find(a.at("id").get<int64_t>());
      if (it == by_id.end()) continue;
      a["content"] = it->second->text;
      a["special"] = it->second->special;
    }
    write_text_file(join_path(dir, "tokenizer.json"), j.dump(2) + "\n");
  } else {
    write_text_file(join_path(dir, "tokenizer.json"), read_text_file(llama3_json()));
  }
  nlohmann::ordered_json cfg = {
      {"add_bos_token", true},
      {"add_eos_token", false},
      {"bos_token", "<|begin_of_text|>"},
      {"eos_token", "<|eot_id|>"},
      {"clean_up_tokenization_spaces", true},
      {"model_max_length", spec.n_ctx},
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"chat_template", kLlama3Template},
  };
  write_text_file(join_path(dir, "tokenizer_config.json"), cfg.dump(2) + "\n");
}

}  // namespace og::synth
