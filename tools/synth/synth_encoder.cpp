// Synthetic encoder embedding models (families bert and nomic-bert): the
// tiny specs, the HF tensor plans (BertModel, NomicBertModel), their
// config.json, and the WordPiece vocabulary of the test data
// (vocab/ggml-vocab-bert-bge.gguf) in GGUF form and as an HF tokenizer.json.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "synth/synth_internal.h"

namespace og::synth {
namespace {

std::string bert_vocab_gguf() { return join_path(testdata_dir(), "vocab/ggml-vocab-bert-bge.gguf"); }

constexpr int64_t kBertVocab = 30522;  // the BGE / BERT uncased vocabulary
constexpr int64_t kCls = 101, kSep = 102;
constexpr int64_t kTokenTypes = 2;

}  // namespace

bool is_encoder(const SynthSpec& s) { return s.family == Family::kBert || s.family == Family::kNomicBert; }

int64_t bert_vocab_size() { return kBertVocab; }

SynthSpec tiny_encoder_spec(Family f) {
  SynthSpec s;
  s.family = f;
  s.d_model = 64;
  s.n_layers = 2;
  s.n_heads = 4;
  s.n_kv_heads = 4;
  s.head_dim = 16;
  s.d_ff = 128;
  s.n_ctx = 128;
  s.rms_eps = 1e-12;  // BERT's layer_norm_eps
  s.tokenizer = "bert";
  s.bidirectional = true;
  s.tied = false;
  if (f == Family::kBert) {
    s.pooling = "cls";  // as BGE
  } else {
    s.pooling = "mean";  // as nomic-embed-text
    s.rope_base = 1000.0;
  }
  return s;
}

void validate_encoder(const SynthSpec& s) {
  OG_CHECK(s.n_heads * s.head_dim == s.d_model, "synthetic model: ", family_name(s.family), " needs n_heads * head_dim (",
           s.n_heads * s.head_dim, ") = d_model (", s.d_model, ")");
  OG_CHECK(s.n_kv_heads == s.n_heads, "synthetic model: ", family_name(s.family), " has no grouped KV heads");
  OG_CHECK(s.tokenizer == "bert", "synthetic model: ", family_name(s.family), " uses the bert (WordPiece) tokenizer");
  OG_CHECK(s.bidirectional && !s.pooling.empty(), "synthetic model: ", family_name(s.family),
           " is a bidirectional embedding model with a pooling type");
  OG_CHECK(s.dense.empty(), "synthetic model: dense projections after an encoder are not written");
}

std::vector<PlannedTensor> plan_encoder(const SynthSpec& s) {
  const int64_t d = s.d_model, ff = s.d_ff;
  std::vector<PlannedTensor> out;
  auto add = [&](std::string hf, std::vector<int64_t> shape, Kind kind, int64_t fan_in = 1) {
    PlannedTensor t;
    t.hf_name = std::move(hf);
    t.shape = std::move(shape);
    t.kind = kind;
    t.fan_in = fan_in;
    out.push_back(std::move(t));
  };
  auto layer_norm = [&](const std::string& name) {
    add(name + ".weight", {d}, Kind::kNorm);
    add(name + ".bias", {d}, Kind::kBias);
  };
  add("embeddings.word_embeddings.weight", {kBertVocab, d}, Kind::kEmbed, d);
  add("embeddings.token_type_embeddings.weight", {kTokenTypes, d}, Kind::kEmbed, d);
  if (s.family == Family::kBert) {
    add("embeddings.position_embeddings.weight", {s.n_ctx, d}, Kind::kEmbed, d);
    layer_norm("embeddings.LayerNorm");
    for (int64_t l = 0; l < s.n_layers; ++l) {
      const std::string h = cat("encoder.layer.", l, ".");
      for (const char* m : {"query", "key", "value"}) {
        add(h + "attention.self." + m + ".weight", {d, d}, Kind::kLinear, d);
        add(h + "attention.self." + m + ".bias", {d}, Kind::kBias);
      }
      add(h + "attention.output.dense.weight", {d, d}, Kind::kLinear, d);
      add(h + "attention.output.dense.bias", {d}, Kind::kBias);
      layer_norm(h + "attention.output.LayerNorm");
      add(h + "intermediate.dense.weight", {ff, d}, Kind::kLinear, d);
      add(h + "intermediate.dense.bias", {ff}, Kind::kBias);
      add(h + "output.dense.weight", {d, ff}, Kind::kLinear, ff);
      add(h + "output.dense.bias", {d}, Kind::kBias);
      layer_norm(h + "output.LayerNorm");
    }
  } else {
    layer_norm("emb_ln");
    for (int64_t l = 0; l < s.n_layers; ++l) {
      const std::string h = cat("encoder.layers.", l, ".");
      add(h + "attn.Wqkv.weight", {3 * d, d}, Kind::kLinear, d);
      add(h + "attn.out_proj.weight", {d, d}, Kind::kLinear, d);
      layer_norm(h + "norm1");
      add(h + "mlp.fc11.weight", {ff, d}, Kind::kLinear, d);
      add(h + "mlp.fc12.weight", {ff, d}, Kind::kLinear, d);
      add(h + "mlp.fc2.weight", {d, ff}, Kind::kLinear, ff);
      layer_norm(h + "norm2");
    }
  }
  return out;
}

nlohmann::ordered_json encoder_hf_config(const SynthSpec& s) {
  nlohmann::ordered_json c;
  if (s.family == Family::kBert) {
    c["architectures"] = {"BertModel"};
    c["model_type"] = "bert";
    c["hidden_size"] = s.d_model;
    c["num_hidden_layers"] = s.n_layers;
    c["num_attention_heads"] = s.n_heads;
    c["intermediate_size"] = s.d_ff;
    c["hidden_act"] = "gelu";
    c["max_position_embeddings"] = s.n_ctx;
    c["type_vocab_size"] = kTokenTypes;
    c["layer_norm_eps"] = s.rms_eps;
    c["position_embedding_type"] = "absolute";
  } else {
    c["architectures"] = {"NomicBertModel"};
    c["model_type"] = "nomic_bert";
    c["n_embd"] = s.d_model;
    c["n_layer"] = s.n_layers;
    c["n_head"] = s.n_heads;
    c["n_inner"] = s.d_ff;
    c["n_positions"] = s.n_ctx;
    c["activation_function"] = "swiglu";
    c["rotary_emb_base"] = s.rope_base;
    c["rotary_emb_fraction"] = 1.0;
    c["rotary_emb_interleaved"] = false;
    c["qkv_proj_bias"] = false;
    c["mlp_fc1_bias"] = false;
    c["mlp_fc2_bias"] = false;
    c["prenorm"] = false;
    c["causal"] = false;
    c["layer_norm_epsilon"] = s.rms_eps;
    c["type_vocab_size"] = kTokenTypes;
  }
  c["vocab_size"] = kBertVocab;
  c["pad_token_id"] = 0;
  c["torch_dtype"] = "float32";
  return c;
}

TokenizerInfo bert_tokenizer_info() {
  TokenizerInfo t;
  t.bos = kCls;
  t.eos = kSep;
  t.eos_all = {kSep};
  return t;
}

// Every tokenizer.* key of the test data's BGE vocabulary but the token type
// count, which the family writes from the model (type_vocab_size).
void add_bert_gguf_tokenizer(GgufWriter& w) {
  require(bert_vocab_gguf());
  auto src = GgufFile::open(bert_vocab_gguf());
  for (const auto& [key, value] : src->metadata())
    if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.token_type_count") w.set(key, value);
}

// The same vocabulary as an HF WordPiece tokenizer.json: GGUF marks
// word-initial pieces with U+2581 and keeps continuations bare; HF keeps
// word-initial pieces bare and prefixes continuations with "##".
void write_bert_hf_tokenizer(const std::string& dir) {
  require(bert_vocab_gguf());
  auto src = GgufFile::open(bert_vocab_gguf());
  const std::optional<std::vector<std::string>> tokens = src->get_string_array("tokenizer.ggml.tokens");
  const std::optional<std::vector<int64_t>> types = src->get_int_array("tokenizer.ggml.token_type");
  OG_CHECK(tokens && types && tokens->size() == types->size(), bert_vocab_gguf(), ": no usable token list");
  const std::string kMark = "\xE2\x96\x81";  // U+2581
  // Unordered (std::map) objects: an ordered_json object of 30522 keys takes
  // quadratic time to build; the order means nothing to a tokenizer.json reader.
  nlohmann::json vocab = nlohmann::json::object();
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (size_t i = 0; i < tokens->size(); ++i) {
    const std::string& t = (*tokens)[i];
    std::string piece;
    if ((*types)[i] == 3) {
      piece = t;  // control tokens ([PAD], [CLS], ...) as they are
      added.push_back({{"id", i}, {"content", t}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", true}});
    } else if (t.rfind(kMark, 0) == 0) {
      piece = t.substr(kMark.size());
    } else {
      piece = "##" + t;
    }
    vocab.emplace(piece, i);  // the first id of a piece wins
  }
  const nlohmann::ordered_json cls = {"[CLS]", {{"id", "[CLS]"}, {"ids", {kCls}}, {"tokens", {"[CLS]"}}}};
  const nlohmann::ordered_json sep = {"[SEP]", {{"id", "[SEP]"}, {"ids", {kSep}}, {"tokens", {"[SEP]"}}}};
  nlohmann::ordered_json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
        {"strip_accents", nullptr}, {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                    {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}},
        {"pair", nlohmann::ordered_json::array()},
        {"special_tokens", {{cls[0], cls[1]}, {sep[0], sep[1]}}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100}, {"vocab", vocab}}}};
  write_text_file(join_path(dir, "tokenizer.json"), j.dump() + "\n");
  const nlohmann::ordered_json cfg = {{"tokenizer_class", "BertTokenizer"}, {"do_lower_case", true},
                                      {"cls_token", "[CLS]"},           {"sep_token", "[SEP]"},
                                      {"unk_token", "[UNK]"},           {"pad_token", "[PAD]"},
                                      {"mask_token", "[MASK]"},         {"model_max_length", 512}};
  write_text_file(join_path(dir, "tokenizer_config.json"), cfg.dump(2) + "\n");
}

}  // namespace og::synth
