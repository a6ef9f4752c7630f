// HF mixture-of-experts checkpoints whose experts are stored fused, as
// transformers v5 saves Qwen3-MoE and Mixtral (mlp.experts.gate_up_proj
// [E, 2 ff, d]: each expert's gate rows then up rows; mlp.experts.down_proj
// [E, d, ff]; Mixtral's block named mlp): read as row views, the same logits
// as the per-expert checkpoint, exported to the same GGUF, and a fused tensor
// of the wrong shape refused naming it.
#include <gtest/gtest.h>

#include <cstring>

#include "file_edit.h"
#include "format/safetensors.h"
#include "model/gguf_convert.h"
#include "synth_fixture.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og {
namespace {

using synth::Family;

// A copy of the synthetic HF checkpoint of f with every layer's experts fused;
// wrong_rows > 0 gives layer 0's gate_up_proj that many rows per expert instead.
std::string fused_checkpoint(Family f, const test::TempDir& dir, int64_t wrong_rows = 0) {
  const synth::SynthSpec s = synth::tiny_spec(f);
  const bool mixtral = f == Family::kMixtral;
  const int64_t E = s.n_experts, d = s.d_model, ff = mixtral ? s.d_ff : s.d_ff_expert;
  const std::string src = test::synth_hf(f);
  std::unique_ptr<SafetensorsSource> st = SafetensorsSource::open_dir(src);
  auto rows_of = [&](const std::string& name) {
    const TensorInfo* t = st->find(name);
    EXPECT_NE(t, nullptr) << name;
    return std::vector<uint8_t>(t->data, t->data + t->nbytes);
  };
  test::HfEdit e;
  const std::string block = mixtral ? "block_sparse_moe" : "mlp";
  const std::string gate = mixtral ? "w1" : "gate_proj", up = mixtral ? "w3" : "up_proj", down = mixtral ? "w2" : "down_proj";
  for (int64_t l = 0; l < s.n_layers; ++l) {
    std::vector<uint8_t> gu, dn;
    for (int64_t x = 0; x < E; ++x) {
      const std::string p = cat("model.layers.", l, ".", block, ".experts.", x, ".");
      for (const std::string& part : {gate, up, down}) e.drop_tensors.insert(p + part + ".weight");
      const std::vector<uint8_t> g = rows_of(p + gate + ".weight"), u = rows_of(p + up + ".weight");
      gu.insert(gu.end(), g.begin(), g.end());
      gu.insert(gu.end(), u.begin(), u.end());
      const std::vector<uint8_t> o = rows_of(p + down + ".weight");
      dn.insert(dn.end(), o.begin(), o.end());
    }
    const std::string base = cat("model.layers.", l, ".mlp.experts.");
    int64_t rows = 2 * ff;
    if (l == 0 && wrong_rows > 0) {
      rows = wrong_rows;
      gu.resize(static_cast<size_t>(E * rows * d * 4));
    }
    e.add.push_back(SafetensorsTensor{base + "gate_up_proj", "F32", {E, rows, d}, gu, nullptr});
    e.add.push_back(SafetensorsTensor{base + "down_proj", "F32", {E, d, ff}, dn, nullptr});
  }
  e.rename = [](const std::string& n) {  // Mixtral's router under the v5 block name
    const size_t at = n.find("block_sparse_moe.");
    return at == std::string::npos ? n : n.substr(0, at) + "mlp." + n.substr(at + 17);
  };
  const std::string out = dir.path(std::string(synth::family_name(f)) + (wrong_rows ? "-bad" : "") + "-fused");
  test::rewrite_hf(src, out, e);
  return out;
}

std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& toks) {
  std::unique_ptr<Model> m = Model::load(path);
  auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  return test::all_logits(*m, *c, toks, 6);
}

TEST(MoeFusedHf, ReadAndExportedLikeThePerExpertCheckpoint) {
  test::TempDir dir;
  for (Family f : {Family::kQwen3Moe, Family::kMixtral}) {
    const std::string fused = fused_checkpoint(f, dir);
    const std::vector<int32_t> toks = test::test_tokens(14, 512, 9);
    EXPECT_LE(test::max_rel_err(logits_of(fused, toks), logits_of(test::synth_hf(f), toks)), 1e-6)
        << synth::family_name(f);
    const std::string gguf = dir.path(std::string(synth::family_name(f)) + "-fused.gguf");
    ConvertOptions o;
    ASSERT_TRUE(weight_type_from_name("f32", &o.type));
    o.metadata = tokenizer_gguf_keys(fused);
    export_hf_to_gguf(fused, gguf, o);
    EXPECT_LE(test::max_rel_err(logits_of(gguf, toks), logits_of(test::synth_gguf(f), toks)), 1e-5)
        << synth::family_name(f);
  }
}

TEST(MoeFusedHf, WrongFusedShapeIsNamed) {
  test::TempDir dir;
  const std::string bad = fused_checkpoint(Family::kQwen3Moe, dir, 40);
  std::string msg;
  try {
    Model::load(bad);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("model.layers.0.mlp.experts.gate_up_proj has shape [8, 40, 64]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace og
