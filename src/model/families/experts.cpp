// Mixture-of-experts facts shared by the families that run experts
// (qwen3moe, mixtral): the GGUF <arch>.expert_* keys in both directions and
// the HF config.json fields, with the refusal of the MoE variants the engine
// does not run (shared experts, dense leading layers, other gating functions).
#include <cmath>

#include "base/error.h"
#include "model/families/common.h"

namespace og {
namespace {

constexpr int64_t kMaxExperts = 1024;

int expert_count(int64_t v, const std::string& where, const std::string& key) {
  OG_CHECK(v > 0 && v <= kMaxExperts, where, ": ", key, " = ", v, " is out of range (1..", kMaxExperts, ")");
  return static_cast<int>(v);
}

// Sets every layer's experts; og::Error naming `used_key` when k > n.
void set_experts(ModelConfig& c, int n, int k, int64_t d_ff_expert, bool norm, const std::string& where,
                 const std::string& used_key) {
  OG_CHECK(k <= n, where, ": ", used_key, " = ", k, " is more than the expert count ", n);
  OG_CHECK(d_ff_expert > 0 && d_ff_expert <= (int64_t{1} << 24), where, ": expert feed-forward width ", d_ff_expert,
           " is out of range");
  for (LayerConfig& L : c.layers) {
    L.n_experts = n;
    L.n_experts_used = k;
    L.d_ff_expert = d_ff_expert;
    L.expert_weights_norm = norm;
  }
}

// GGUF keys that describe MoE variants the engine does not run.
void refuse_gguf_moe_variants(const GgufFile& f, const std::string& p) {
  const std::string src = f.source_name();
  for (const char* key : {"expert_shared_count", "leading_dense_block_count", "expert_shared_feed_forward_length"})
    if (auto v = f.get_int(p + key); v && *v != 0)
      fail(src, ": ", p, key, " = ", *v, " is not supported (shared experts and dense leading layers are not run)");
  if (auto v = f.get_int(p + "expert_group_count"); v && *v > 1)
    fail(src, ": ", p, "expert_group_count = ", *v, ": grouped expert selection is not supported");
  // llama.cpp's gating function ids: 1 = softmax (the default), 2 = sigmoid, ...
  if (auto v = f.get_int(p + "expert_gating_func"); v && *v != 1)
    fail(src, ": ", p, "expert_gating_func = ", *v, " is not supported (only softmax, 1)");
  if (auto v = f.get_float(p + "expert_weights_scale"); v && *v != 0 && *v != 1)
    fail(src, ": ", p, "expert_weights_scale = ", *v, " is not supported");
}

}  // namespace

void read_gguf_experts(const GgufFile& f, const std::string& arch, ModelConfig& c, bool expert_ff_key) {
  const std::string src = f.source_name();
  const std::string p = arch + ".";
  const std::optional<int64_t> n = f.get_int(p + "expert_count");
  if (!n || *n == 0) {
    OG_CHECK(!f.get_int(p + "expert_used_count").value_or(0), src, ": ", p, "expert_used_count is set but ", p,
             "expert_count is not");
    return;
  }
  const int E = expert_count(*n, src, p + "expert_count");
  const std::optional<int64_t> k = f.get_int(p + "expert_used_count");
  OG_CHECK(k.has_value(), src, ": missing required key ", p, "expert_used_count (", p, "expert_count is ", E, ")");
  const int K = expert_count(*k, src, p + "expert_used_count");
  refuse_gguf_moe_variants(f, p);
  int64_t ff = c.layers.at(0).d_ff;
  const std::optional<int64_t> ff_key = f.get_int(p + "expert_feed_forward_length");
  if (expert_ff_key) {
    OG_CHECK(ff_key.has_value(), src, ": missing required key ", p, "expert_feed_forward_length");
    ff = *ff_key;
  } else if (ff_key) {
    // llama.cpp runs this arch's experts at feed_forward_length.
    OG_CHECK(*ff_key == ff, src, ": ", p, "expert_feed_forward_length = ", *ff_key, " differs from ", p,
             "feed_forward_length ", ff, ", which this architecture's experts use");
  }
  for (const LayerConfig& L : c.layers)
    OG_CHECK(expert_ff_key || L.d_ff == ff, src, ": ", p, "feed_forward_length differs between layers of a "
             "mixture of experts");
  const bool norm = f.get_bool(p + "expert_weights_norm").value_or(true);
  set_experts(c, E, K, ff, norm, src, p + "expert_used_count");
}

void write_gguf_experts(const ModelConfig& c, const std::string& arch, GgufWriter& w, bool expert_ff_key) {
  const LayerConfig& L0 = c.layers.at(0);
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    OG_CHECK(L.n_experts == L0.n_experts && L.n_experts_used == L0.n_experts_used &&
                 L.d_ff_expert == L0.d_ff_expert && L.expert_weights_norm == L0.expert_weights_norm,
             "cannot write ", c.architecture, " as GGUF ", arch, ": layer ", l,
             " has other experts than layer 0 (the format stores one expert set-up for every layer)");
  }
  if (L0.n_experts == 0) return;
  const std::string p = arch + ".";
  w.set(p + "expert_count", GgufValue::make_u32(static_cast<uint32_t>(L0.n_experts)));
  w.set(p + "expert_used_count", GgufValue::make_u32(static_cast<uint32_t>(L0.n_experts_used)));
  if (expert_ff_key) {
    w.set(p + "expert_feed_forward_length", GgufValue::make_u32(static_cast<uint32_t>(L0.d_ff_expert)));
  } else {
    OG_CHECK(L0.d_ff_expert == L0.d_ff, "cannot write ", c.architecture, " as GGUF ", arch, ": the experts are ",
             L0.d_ff_expert, " wide but the feed-forward width is ", L0.d_ff, " (the format has one width)");
  }
  // llama.cpp renormalises the chosen weights of these archs without a key;
  // the key is written only when the model does not (offgraph reads it).
  if (!L0.expert_weights_norm) {
    OG_CHECK(expert_ff_key, "cannot write ", c.architecture, " as GGUF ", arch,
             ": unnormalised expert weights have no key in this format");
    w.set(p + "expert_weights_norm", GgufValue::make_bool(false));
  }
}

void read_hf_experts(const HfInput& in, ModelConfig& c, const HfExpertFields& k) {
  const nlohmann::json& cfg = in.config;
  const std::string& file = in.file;
  const std::optional<int64_t> n = json_int(cfg, k.count, file);
  if (!n || *n == 0) return;  // a dense checkpoint of the family
  const int E = expert_count(*n, file, k.count);
  const std::optional<int64_t> used = json_int(cfg, "num_experts_per_tok", file);
  OG_CHECK(used.has_value(), file, ": missing required field num_experts_per_tok (", k.count, " is ", E, ")");
  const int K = expert_count(*used, file, "num_experts_per_tok");
  const std::optional<int64_t> ff = json_int(cfg, k.width, file);
  OG_CHECK(ff.has_value(), file, ": missing required field ", k.width);
  bool norm = true;
  if (k.norm != nullptr) norm = json_bool(cfg, k.norm, file).value_or(k.norm_default);
  if (auto step = json_int(cfg, "decoder_sparse_step", file); step && *step != 1)
    fail(file, ": decoder_sparse_step = ", *step, " is not supported (every layer must be a mixture of experts)");
  if (json_has(cfg, "mlp_only_layers") && !(cfg.at("mlp_only_layers").is_array() && cfg.at("mlp_only_layers").empty()))
    fail(file, ": mlp_only_layers = ", json_excerpt(cfg.at("mlp_only_layers")),
         " is not supported (every layer must be a mixture of experts)");
  for (const char* key : {"shared_expert_intermediate_size", "n_shared_experts", "first_k_dense_replace"})
    if (auto v = json_int(cfg, key, file); v && *v != 0) fail(file, ": ", key, " = ", *v, " is not supported");
  set_experts(c, E, K, *ff, norm, file, "num_experts_per_tok");
}

}  // namespace og
