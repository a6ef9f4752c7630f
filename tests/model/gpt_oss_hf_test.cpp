// gpt-oss HF checkpoints (GptOssForCausalLM) as og-synth writes them: the
// experts fused as transformers holds them (F32 / BF16 gate_up_proj with
// gate at even columns, down_proj input-major) or in the released MXFP4
// _blocks / _scales form. Each loads with the logits of the same model's
// GGUF (og-synth's, same values) and of our export of it (MXFP4 experts
// kept as they are under export's float types); yarn truncate =
// false is run as transformers and exported truncated, with a note; bad
// tensors and fields are errors naming them.
#include <gtest/gtest.h>

#include <optional>

#include "file_edit.h"
#include "kernels/kernel_table.h"
#include "model/config.h"
#include "model/gguf_convert.h"
#include "synth_fixture.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og {
namespace {

using synth::Family;

synth::SynthSpec spec_in(DType experts) {
  synth::SynthSpec s = synth::tiny_spec(Family::kGptOss);
  s.weight_dtype = experts;  // GGUF: MXFP4 experts, other matrices F32 (gpt_oss_dense_dtype)
  return s;
}

std::string hf_of(DType experts) {
  return test::synth_path(spec_in(experts), true, cat("gpt-oss-", dtype_name(static_cast<uint32_t>(experts))));
}
std::string gguf_of(DType experts) {
  return test::synth_path(spec_in(experts), false, cat("gpt-oss-", dtype_name(static_cast<uint32_t>(experts))));
}

std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& toks) {
  std::unique_ptr<Model> m = Model::load(path);
  auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  return test::all_logits(*m, *c, toks, 5);
}

ConvertSummary export_f32(const std::string& hf, const std::string& gguf) {
  ConvertOptions o;
  EXPECT_TRUE(weight_type_from_name("f32", &o.type));
  o.metadata = tokenizer_gguf_keys(hf);
  return export_hf_to_gguf(hf, gguf, o);
}

std::string error_of(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The scalar kernels while in scope. The BF16 case compares BF16 experts with
// their F32 export: the scalar and AVX2 BF16 kernels multiply f32 activations
// as the F32 ones do, where AVX-512's vdpbf16ps rounds the activations to
// bf16 (a logit moves by ~1e-2 over four layers; the kernel tests bound it).
struct ScalarKernels {
  kernels::Isa saved = kernels::set_active_isa(kernels::Isa::kScalar);
  ~ScalarKernels() { kernels::set_active_isa(saved); }
};

// 14 tokens: past the window (8) of the sliding layers.
const std::vector<int32_t>& tokens() {
  static const std::vector<int32_t> t = test::test_tokens(14, 512, 5);
  return t;
}

TEST(GptOssHf, LoadsLikeTheGgufAndExportsToIt) {
  test::TempDir dir;
  for (DType experts : {DType::F32, DType::BF16, DType::MXFP4}) {
    const std::string name = dtype_name(static_cast<uint32_t>(experts));
    std::optional<ScalarKernels> scalar;
    if (experts == DType::BF16) scalar.emplace();
    const std::vector<float> hf = logits_of(hf_of(experts), tokens());
    // The same values as og-synth's GGUF (BF16 experts are rounded, so only the export is equal).
    if (experts != DType::BF16) {
      EXPECT_LE(test::max_rel_err(hf, logits_of(gguf_of(experts), tokens())), 1e-5) << name;
    }
    const std::string gguf = dir.path(name + ".gguf");
    const ConvertSummary s = export_f32(hf_of(experts), gguf);
    EXPECT_TRUE(s.notes.empty()) << name;
    // MXFP4 experts stay MXFP4 under a float type (3 stacks in each of 4 layers).
    EXPECT_EQ(s.dtype_counts.count("mxfp4") ? s.dtype_counts.at("mxfp4") : 0, experts == DType::MXFP4 ? 12 : 0)
        << name;
    EXPECT_LE(test::max_rel_err(hf, logits_of(gguf, tokens())), 1e-5) << name;
  }
}

TEST(GptOssHf, UntruncatedYarnRunsAsTransformersAndExportsTruncated) {
  test::TempDir dir;
  test::HfEdit e;
  e.config = [](nlohmann::json& c) { c["rope_scaling"]["truncate"] = false; };
  const std::string hf = dir.path("untruncated");
  test::rewrite_hf(hf_of(DType::F32), hf, e);
  const std::unique_ptr<Model> a = Model::load(hf), b = Model::load(hf_of(DType::F32));
  const std::vector<float>& fa = a->config().layers[0].rope_inv_freq;
  const std::vector<float>& fb = b->config().layers[0].rope_inv_freq;
  ASSERT_EQ(fa.size(), fb.size());
  EXPECT_NE(fa, fb);  // the ramp's corners differ (tiny spec: 16-dim heads, yarn 8 over 256)
  const ConvertSummary s = export_f32(hf, dir.path("t.gguf"));
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("truncate = false"), std::string::npos) << s.notes[0];
  EXPECT_EQ(Model::load(dir.path("t.gguf"))->config().layers[0].rope_inv_freq, fb);
}

TEST(GptOssHf, BadTensorsAndFieldsAreNamed) {
  test::TempDir dir;
  const std::string base = "model.layers.0.mlp.experts.";
  auto edited = [&](const std::string& name, DType experts, const test::HfEdit& e) {
    const std::string p = dir.path(name);
    test::rewrite_hf(hf_of(experts), p, e);
    return error_of(p);
  };
  test::HfEdit drop_scales;
  drop_scales.drop_tensors = {base + "gate_up_proj_scales"};
  EXPECT_NE(edited("noscales", DType::MXFP4, drop_scales).find("missing tensor " + base + "gate_up_proj_scales"),
            std::string::npos);
  test::HfEdit drop_fused;
  drop_fused.drop_tensors = {base + "gate_up_proj"};
  EXPECT_NE(edited("nofused", DType::F32, drop_fused)
                .find("missing tensor " + base + "gate_up_proj (or its MXFP4 form gate_up_proj_blocks and _scales)"),
            std::string::npos);
  test::HfEdit wrong;  // gate_up_proj with ff columns instead of 2 ff
  wrong.drop_tensors = {base + "gate_up_proj"};
  wrong.add.push_back(SafetensorsTensor{base + "gate_up_proj", "F32", {8, 64, 32},
                                        std::vector<uint8_t>(8 * 64 * 32 * 4), nullptr});
  EXPECT_NE(edited("wrong", DType::F32, wrong)
                .find("tensor " + base + "gate_up_proj has shape [8, 64, 32], expected [8, 64, 64]"),
            std::string::npos);
  test::HfEdit limit;
  limit.config = [](nlohmann::json& c) { c["swiglu_limit"] = 8.0; };
  EXPECT_NE(edited("limit", DType::F32, limit).find("swiglu_limit = 8 is not supported"), std::string::npos);
  test::HfEdit factor;
  factor.config = [](nlohmann::json& c) { c["rope_scaling"]["factor"] = 4.0; };
  EXPECT_NE(edited("factor", DType::F32, factor).find("rope_scaling.factor 4 disagrees with max_position_embeddings"),
            std::string::npos);
  test::HfEdit rope;
  rope.config = [](nlohmann::json& c) { c["rope_scaling"]["rope_type"] = "dynamic"; };
  EXPECT_NE(edited("rope", DType::F32, rope).find("rope_scaling.rope_type 'dynamic' is not supported"),
            std::string::npos);
  test::HfEdit types;
  types.config = [](nlohmann::json& c) { c["layer_types"][1] = "chunked_attention"; };
  EXPECT_NE(edited("types", DType::F32, types).find("layer_types entry 'chunked_attention' is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace og
