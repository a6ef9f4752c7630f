// The embedding facts of a model file in both formats: GGUF <arch>.pooling_type
// (llama.cpp's enum), <arch>.attention.causal and the sentence-transformers
// dense projections (<arch>.dense_2_feat_*, dense_3_feat_*; tensors dense_2 /
// dense_3), and their HF form (modules.json, 1_Pooling/config.json, N_Dense/).
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/families/common.h"

namespace og {
namespace {

constexpr int64_t kMaxDenseDim = int64_t{1} << 24;

int64_t dense_dim(const GgufFile& f, const std::string& key) {
  const std::optional<int64_t> v = f.get_int(key);
  OG_CHECK(v.has_value(), f.source_name(), ": missing key ", key, " (the file has the other dense keys)");
  OG_CHECK(*v > 0 && *v <= kMaxDenseDim, f.source_name(), ": ", key, " = ", *v, " is out of range");
  return *v;
}

}  // namespace

void read_gguf_embedding(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  const std::string p = arch + ".";
  const std::string src = f.source_name();
  if (auto v = f.get_int(p + "pooling_type")) {
    switch (*v) {
      case 0: c.pooling = Pooling::kNone; break;
      case 1: c.pooling = Pooling::kMean; break;
      case 2: c.pooling = Pooling::kCls; break;
      case 3: c.pooling = Pooling::kLast; break;
      default:
        fail(src, ": ", p, "pooling_type = ", *v, " is not supported (0 none, 1 mean, 2 cls, 3 last; 4 rank is not)");
    }
  }
  if (f.get(p + "attention.causal") != nullptr) {
    const std::optional<bool> causal = f.get_bool(p + "attention.causal");
    OG_CHECK(causal.has_value(), src, ": ", p, "attention.causal must be a bool");
    c.causal = *causal;
  }
  // dense_2: [feat_out, d_model] right after pooling; dense_3: [feat_out, feat_in] after it.
  const bool d2 = f.get(p + "dense_2_feat_out") != nullptr || f.get(p + "dense_2_feat_in") != nullptr;
  const bool d3 = f.get(p + "dense_3_feat_out") != nullptr || f.get(p + "dense_3_feat_in") != nullptr;
  OG_CHECK(!d3 || d2, src, ": ", p, "dense_3_feat_* without ", p, "dense_2_feat_* is not supported");
  if (d2) {
    const int64_t out = dense_dim(f, p + "dense_2_feat_out");
    const int64_t in = f.get(p + "dense_2_feat_in") ? dense_dim(f, p + "dense_2_feat_in") : c.d_model;
    OG_CHECK(in == c.d_model, src, ": ", p, "dense_2_feat_in = ", in, " must equal the embedding length ", c.d_model);
    c.dense.push_back({in, out, "2_Dense"});
  }
  if (d3) {
    const int64_t in = dense_dim(f, p + "dense_3_feat_in");
    const int64_t out = f.get(p + "dense_3_feat_out") ? dense_dim(f, p + "dense_3_feat_out") : c.d_model;
    OG_CHECK(in == c.dense[0].d_out, src, ": ", p, "dense_3_feat_in = ", in, " must equal ", p,
             "dense_2_feat_out = ", c.dense[0].d_out);
    c.dense.push_back({in, out, "3_Dense"});
  }
  for (const char* t : {"dense_2.weight", "dense_3.weight"}) {
    const bool declared = std::string(t) == "dense_2.weight" ? d2 : d3;
    OG_CHECK(declared || f.find(t) == nullptr, src, ": tensor ", t, " is present but its ", p,
             "dense_*_feat_* keys are not");
  }
  for (const char* t : {"dense_2.bias", "dense_3.bias"})
    OG_CHECK(f.find(t) == nullptr, src, ": tensor ", t, ": dense projection biases are not supported");
}

void write_gguf_embedding(const ModelConfig& c, const std::string& arch, GgufWriter& w, bool causal_key) {
  const std::string p = arch + ".";
  if (c.pooling != Pooling::kUnset)
    w.set(p + "pooling_type", GgufValue::make_u32(static_cast<uint32_t>(static_cast<int>(c.pooling))));
  if (causal_key && !c.causal) w.set(p + "attention.causal", GgufValue::make_bool(false));
  OG_CHECK(c.dense.size() <= 2, "cannot write ", c.architecture, " as GGUF ", arch, ": ", c.dense.size(),
           " dense projections (the format has dense_2 and dense_3 only)");
  for (size_t i = 0; i < c.dense.size(); ++i) {
    const std::string k = cat(p, "dense_", i + 2, "_feat_");
    w.set(k + "in", GgufValue::make_u32(static_cast<uint32_t>(c.dense[i].d_in)));
    w.set(k + "out", GgufValue::make_u32(static_cast<uint32_t>(c.dense[i].d_out)));
  }
  OG_CHECK(c.dense.size() != 2 || c.dense[1].d_out == c.d_model, "cannot write ", c.architecture, " as GGUF ", arch,
           ": llama.cpp requires dense_3_feat_out (", c.dense[1].d_out, ") to equal the embedding length ",
           c.d_model);
}

namespace {

// The pooling of a sentence-transformers Pooling module's config.json.
Pooling st_pooling(const std::string& file) {
  const nlohmann::json cfg = read_json_file(file);
  auto flag = [&](const char* k) { return json_bool(cfg, k, file).value_or(false); };
  std::vector<Pooling> modes;
  if (flag("pooling_mode_mean_tokens")) modes.push_back(Pooling::kMean);
  if (flag("pooling_mode_cls_token")) modes.push_back(Pooling::kCls);
  if (flag("pooling_mode_lasttoken")) modes.push_back(Pooling::kLast);
  for (const char* k : {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"})
    OG_CHECK(!flag(k), file, ": ", k, " = true is not supported (supported: mean, cls, lasttoken)");
  if (auto m = json_string(cfg, "pooling_mode", file)) {
    if (*m == "mean") modes.push_back(Pooling::kMean);
    else if (*m == "cls") modes.push_back(Pooling::kCls);
    else if (*m == "lasttoken") modes.push_back(Pooling::kLast);
    else fail(file, ": pooling_mode '", *m, "' is not supported (supported: mean, cls, lasttoken)");
  }
  OG_CHECK(!modes.empty(), file, ": no pooling mode is set (pooling_mode_mean_tokens / cls_token / lasttoken)");
  for (Pooling m : modes)
    OG_CHECK(m == modes[0], file, ": more than one pooling mode is set (only one is supported)");
  return modes[0];
}

// A sentence-transformers Dense module's config.json: identity, no bias.
DenseProjection st_dense(const std::string& dir, const std::string& path) {
  const std::string file = dir + "/" + path + "/config.json";
  const nlohmann::json cfg = read_json_file(file);
  DenseProjection d;
  d.hf_path = path;
  const std::optional<int64_t> in = json_int(cfg, "in_features", file), out = json_int(cfg, "out_features", file);
  OG_CHECK(in && out && *in > 0 && *out > 0 && *in <= kMaxDenseDim && *out <= kMaxDenseDim, file,
           ": in_features and out_features must be positive integers");
  d.d_in = *in;
  d.d_out = *out;
  OG_CHECK(!json_bool(cfg, "bias", file).value_or(false), file, ": bias = true is not supported");
  const std::string act = json_string(cfg, "activation_function", file).value_or("torch.nn.modules.linear.Identity");
  OG_CHECK(act == "torch.nn.modules.linear.Identity" || act == "torch.nn.Identity", file, ": activation_function '",
           act, "' is not supported (only Identity)");
  return d;
}

}  // namespace

void read_hf_embedding(const std::string& dir, const nlohmann::json& cfg, const std::string& config_file,
                       ModelConfig& c) {
  // A bool makes the whole model bidirectional (an embedding model); Gemma 4's
  // "vision" only opens image spans, which families/gemma4.cpp reads.
  const bool image_spans_only = json_has(cfg, "use_bidirectional_attention") &&
                                cfg.at("use_bidirectional_attention") == "vision";
  if (!image_spans_only)
    if (auto b = json_bool(cfg, "use_bidirectional_attention", config_file)) c.causal = !*b;
  const std::string modules_file = dir + "/modules.json";
  std::error_code ec;
  if (!std::filesystem::exists(modules_file, ec)) return;
  const nlohmann::json mods = nlohmann::json::parse(read_text_file(modules_file), nullptr, false);
  OG_CHECK(!mods.is_discarded() && mods.is_array(), modules_file, ": must be a JSON list of modules");
  for (const nlohmann::json& m : mods) {
    OG_CHECK(m.is_object(), modules_file, ": each module must be an object, got ", json_excerpt(m));
    const std::string type = json_string(m, "type", modules_file).value_or("");
    const std::string path = json_string(m, "path", modules_file).value_or("");
    auto ends = [&](const char* s) { return type.size() >= std::strlen(s) && type.rfind(s) == type.size() - std::strlen(s); };
    if (ends("Transformer")) continue;
    if (ends("Normalize")) continue;  // L2 normalisation is the front ends' default
    OG_CHECK(!path.empty() && path.find("..") == std::string::npos, modules_file, ": module ", type,
             " has no usable path");
    if (ends("Pooling")) {
      OG_CHECK(c.pooling == Pooling::kUnset, modules_file, ": more than one Pooling module");
      c.pooling = st_pooling(dir + "/" + path + "/config.json");
    } else if (ends("Dense")) {
      OG_CHECK(c.pooling != Pooling::kUnset, modules_file, ": a Dense module before the Pooling module is not supported");
      c.dense.push_back(st_dense(dir, path));
    } else {
      fail(modules_file, ": module type '", type, "' is not supported (Transformer, Pooling, Dense, Normalize)");
    }
  }
}

}  // namespace og
