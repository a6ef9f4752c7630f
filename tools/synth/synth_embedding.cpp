// Synthetic embedding models: the spec checks, the sentence-transformers
// modules of the HF form (modules.json, 1_Pooling/config.json, k_Dense/ with
// config.json and linear.weight), and the same facts as config fields, from
// which the GGUF form's pooling_type, causality and dense_* keys are written.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "synth/synth_internal.h"

namespace og::synth {
namespace {

Pooling pooling_of(const std::string& s) {
  if (s == "none") return Pooling::kNone;
  if (s == "mean") return Pooling::kMean;
  if (s == "cls") return Pooling::kCls;
  if (s == "last") return Pooling::kLast;
  fail("synthetic model: pooling '", s, "' is not one of none, mean, cls, last");
}

std::string dense_dir(size_t i) { return cat(i + 2, "_Dense"); }

}  // namespace

SynthSpec tiny_embedding_spec(Family f) {
  SynthSpec s = tiny_spec(f);
  if (is_encoder(s)) {
    // tiny_spec is already the embedding model (bert: cls pooling, nomic-bert: mean)
  } else if (f == Family::kQwen3) {
    s.pooling = "last";
  } else if (f == Family::kGemma3) {
    s.pooling = "mean";
    s.bidirectional = true;
    s.dense = {4 * s.d_model, s.d_model};
  } else {
    fail("synthetic model: embedding specs are written for qwen3, gemma3, bert and nomic-bert, not ", family_name(f));
  }
  return s;
}

bool is_embedding(const SynthSpec& s) { return !s.pooling.empty(); }

void validate_embedding(const SynthSpec& s) {
  if (!is_embedding(s)) {
    OG_CHECK(!s.bidirectional && s.dense.empty(), "synthetic model: bidirectional attention and dense projections "
             "need a pooling type");
    return;
  }
  pooling_of(s.pooling);
  if (is_encoder(s)) return validate_encoder(s);
  OG_CHECK(s.family == Family::kQwen3 || s.family == Family::kGemma3, "synthetic model: embedding specs are written "
           "for qwen3 and gemma3, not ", family_name(s.family));
  OG_CHECK(!s.bidirectional || s.family == Family::kGemma3, "synthetic model: bidirectional attention is written "
           "for gemma3 only (EmbeddingGemma)");
  OG_CHECK(s.script.empty(), "synthetic model: a reply script does not combine with an embedding spec");
  OG_CHECK(s.dense.size() <= 2, "synthetic model: at most two dense projections (GGUF dense_2, dense_3)");
  for (int64_t w : s.dense)
    OG_CHECK(w > 0 && w <= (int64_t{1} << 20), "synthetic model: dense width ", w, " must be in 1..2^20");
}

void plan_dense(const SynthSpec& s, std::vector<PlannedTensor>& out) {
  int64_t in = s.d_model;
  for (size_t i = 0; i < s.dense.size(); ++i) {
    PlannedTensor t;
    t.hf_name = dense_dir(i) + "/linear.weight";
    t.shape = {s.dense[i], in};
    t.kind = Kind::kLinear;
    t.fan_in = in;
    out.push_back(std::move(t));
    in = s.dense[i];
  }
}

void apply_embedding_config(const SynthSpec& s, ModelConfig& c) {
  if (!is_embedding(s)) return;
  c.pooling = pooling_of(s.pooling);
  c.causal = !s.bidirectional;
  int64_t in = s.d_model;
  for (size_t i = 0; i < s.dense.size(); ++i) {
    c.dense.push_back({in, s.dense[i], dense_dir(i)});
    in = s.dense[i];
  }
}

std::string module_of(const std::string& hf_name) {
  const size_t slash = hf_name.find('/');
  return slash == std::string::npos ? "" : hf_name.substr(0, slash);
}

void write_st_modules(const SynthSpec& s, const std::string& dir) {
  if (!is_embedding(s)) return;
  const std::string kPrefix = "sentence_transformers.models.";
  nlohmann::ordered_json mods = nlohmann::ordered_json::array();
  auto module = [&](const std::string& path, const std::string& type) {
    const size_t i = mods.size();
    mods.push_back(
        nlohmann::ordered_json{{"idx", i}, {"name", std::to_string(i)}, {"path", path}, {"type", kPrefix + type}});
  };
  module("", "Transformer");
  std::error_code ec;
  const Pooling p = pooling_of(s.pooling);
  if (p != Pooling::kNone) {
    module("1_Pooling", "Pooling");
    std::filesystem::create_directories(join_path(dir, "1_Pooling"), ec);
    OG_CHECK(!ec, dir, "/1_Pooling: cannot create: ", ec.message());
    const nlohmann::ordered_json pool = {{"word_embedding_dimension", s.d_model},
                                         {"pooling_mode_cls_token", p == Pooling::kCls},
                                         {"pooling_mode_mean_tokens", p == Pooling::kMean},
                                         {"pooling_mode_max_tokens", false},
                                         {"pooling_mode_mean_sqrt_len_tokens", false},
                                         {"pooling_mode_weightedmean_tokens", false},
                                         {"pooling_mode_lasttoken", p == Pooling::kLast},
                                         {"include_prompt", true}};
    write_text_file(join_path(dir, "1_Pooling/config.json"), pool.dump(2) + "\n");
  }
  int64_t in = s.d_model;
  for (size_t i = 0; i < s.dense.size(); ++i) {
    module(dense_dir(i), "Dense");
    std::filesystem::create_directories(join_path(dir, dense_dir(i)), ec);
    OG_CHECK(!ec, dir, "/", dense_dir(i), ": cannot create: ", ec.message());
    const nlohmann::ordered_json cfg = {{"in_features", in},
                                        {"out_features", s.dense[i]},
                                        {"bias", false},
                                        {"activation_function", "torch.nn.modules.linear.Identity"}};
    write_text_file(join_path(dir, dense_dir(i) + "/config.json"), cfg.dump(2) + "\n");
    in = s.dense[i];
  }
  module(cat(mods.size(), "_Normalize"), "Normalize");
  write_text_file(join_path(dir, "modules.json"), mods.dump(2) + "\n");
}

}  // namespace og::synth
