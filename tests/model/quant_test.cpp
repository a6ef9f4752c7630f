// Quantized synthetic models against their F32 twin: next-token distributions
// stay close (mean KL divergence and top-1 agreement within per-dtype budgets
// measured on these models and written below), and the dequantised weights
// stay within each format's error bound relative to the F32 weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "format/gguf.h"
#include "kernels/ops.h"
#include "model/gguf_convert.h"
#include "synth_fixture.h"

namespace og {
namespace {

using synth::Family;

// Shapes whose rows are whole 256-element super-blocks, so every K-quant is
// used as requested (no fallback to Q8_0).
synth::SynthSpec quant_spec(Family f, DType dt) {
  synth::SynthSpec s = synth::tiny_spec(f);
  s.d_model = 256;
  s.n_heads = 8;
  s.n_kv_heads = f == Family::kGemma3 ? 2 : 4;
  s.head_dim = 32;
  s.d_ff = 512;
  s.weight_dtype = dt;
  return s;
}

std::string quant_path(Family f, DType dt) {
  return test::synth_path(quant_spec(f, dt), false, std::string("q-") + synth::family_name(f) + "-" + dtype_name(static_cast<uint32_t>(dt)));
}

struct Budget {
  DType dtype;
  double max_mean_kl;     // mean over positions of KL(p_f32 || p_quant), nats
  double min_top1_llama;  // fraction of positions whose argmax agrees (llama: flat random-weight logits)
  double min_top1_gemma;  // (gemma3: tied, more peaked logits)
  double max_weight_err;  // max |w_q - w| / max|w| over a weight matrix
};

// Measured on these models (64 positions; mean KL llama / gemma3, top-1
// llama / gemma3) with the reference kernels, then set with headroom:
//   f16   3.8e-7 / 4.3e-7   1.00 / 1.00     bf16  3.0e-5 / 2.7e-5   0.98 / 0.98
//   q8_0  4.9e-4 / 5.0e-4   0.98 / 1.00     q6_k  3.3e-3 / 3.5e-3   0.88 / 0.98
//   q5_1  1.7e-2 / 1.3e-2   0.64 / 0.97     q5_0  1.8e-2 / 1.8e-2   0.77 / 0.97
//   q5_k  1.3e-2 / 1.3e-2   0.75 / 0.98     q4_1  5.6e-2 / 5.5e-2   0.67 / 0.95
//   q4_0  7.0e-2 / 6.6e-2   0.52 / 0.91     q4_k  5.1e-2 / 4.9e-2   0.56 / 1.00
//   iq4_nl 5.1e-2 / 4.7e-2  0.41 / 0.98     iq4_xs 5.2e-2 / 4.9e-2  0.44 / 0.97
//   mxfp4 0.10 / 0.11       0.31 / 0.92     q3_k  0.17 / 0.16       0.19 / 0.91
//   q2_k  0.46 / 0.40       0.05 / 0.86
//   (weights, max |err| / max |w|: iq4_nl 0.082, iq4_xs 0.084, mxfp4 0.159,
//   q3_k 0.172, q2_k 0.28)
// Random-weight llama logits are nearly flat, so its top-1 flips easily.
// Weight bounds: f16 2^-11, bf16 2^-8; legacy blocks half a step of the
// block's range plus f16 scale rounding (q8_0 1/254, q5_1 1/31, q4_1 1/15),
// and for the symmetric q4_0 / q5_0 the clamped far side (1/8, 1/16); the
// K-quants' searched scales measured 0.019 (q6_k), 0.028 (q5_k), 0.062 (q4_k).
const Budget kBudgets[] = {
    {DType::F16, 2e-6, 0.95, 0.95, 5e-4},    {DType::BF16, 1e-4, 0.9, 0.9, 4e-3},
    {DType::Q8_0, 1.5e-3, 0.9, 0.95, 4.5e-3}, {DType::Q6_K, 1e-2, 0.75, 0.9, 0.03},
    {DType::Q5_1, 4e-2, 0.5, 0.85, 0.035},   {DType::Q5_0, 5e-2, 0.6, 0.85, 0.065},
    {DType::Q5_K, 4e-2, 0.6, 0.85, 0.045},   {DType::Q4_1, 0.15, 0.5, 0.8, 0.07},
    {DType::Q4_0, 0.15, 0.4, 0.75, 0.13},    {DType::Q4_K, 0.15, 0.4, 0.8, 0.09},
    {DType::IQ4_NL, 0.15, 0.3, 0.8, 0.1},     {DType::IQ4_XS, 0.15, 0.3, 0.8, 0.1},
    {DType::MXFP4, 0.25, 0.2, 0.75, 0.19},    {DType::Q3_K, 0.35, 0.1, 0.7, 0.21},
    {DType::Q2_K, 0.8, 0.0, 0.6, 0.34},
};

std::vector<double> softmax_d(const float* x, int64_t n) {
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  std::vector<double> p(n);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += (p[i] = std::exp(x[i] - mx));
  for (double& v : p) v /= s;
  return p;
}

class Quant : public ::testing::TestWithParam<std::tuple<Family, Budget>> {};

TEST_P(Quant, NextTokenDistributionStaysClose) {
  const auto [family, budget] = GetParam();
  std::unique_ptr<Model> ref = Model::load(quant_path(family, DType::F32));
  std::unique_ptr<Model> q = Model::load(quant_path(family, budget.dtype));
  const std::vector<int32_t> toks = test::test_tokens(64, ref->n_vocab(), 13);
  auto cr = make_kv_cache(KvKind::kReference, ref->kv_geometry(), KvPolicy{});
  auto cq = make_kv_cache(KvKind::kReference, q->kv_geometry(), KvPolicy{});
  const std::vector<float> lr = test::all_logits(*ref, *cr, toks, 64);
  const std::vector<float> lq = test::all_logits(*q, *cq, toks, 64);
  const int64_t V = ref->n_vocab();
  double kl_sum = 0;
  int agree = 0;
  for (size_t t = 0; t < toks.size(); ++t) {
    const std::vector<double> p = softmax_d(lr.data() + t * V, V);
    const std::vector<double> r = softmax_d(lq.data() + t * V, V);
    double kl = 0;
    for (int64_t i = 0; i < V; ++i) kl += p[i] * (std::log(p[i]) - std::log(r[i]));
    kl_sum += kl;
    agree += test::argmax(lr.data() + t * V, V) == test::argmax(lq.data() + t * V, V);
  }
  const double mean_kl = kl_sum / toks.size();
  const double top1 = static_cast<double>(agree) / toks.size();
  std::printf("[measured] %s %s: mean KL %.3g, top-1 %.3f\n", synth::family_name(family),
              dtype_name(static_cast<uint32_t>(budget.dtype)).c_str(), mean_kl, top1);
  EXPECT_LE(mean_kl, budget.max_mean_kl);
  EXPECT_GE(top1, family == Family::kLlama ? budget.min_top1_llama : budget.min_top1_gemma);
}

TEST_P(Quant, WeightsAreStoredInTheRequestedDtypeWithinTheFormatBound) {
  const auto [family, budget] = GetParam();
  std::unique_ptr<GgufFile> ref = GgufFile::open(quant_path(family, DType::F32));
  std::unique_ptr<GgufFile> q = GgufFile::open(quant_path(family, budget.dtype));
  for (const char* name : {"blk.0.attn_q.weight", "blk.1.ffn_down.weight", "blk.0.ffn_gate.weight"}) {
    const TensorInfo* tr = ref->find(name);
    const TensorInfo* tq = q->find(name);
    ASSERT_TRUE(tr && tq) << name;
    ASSERT_EQ(tq->type_id, static_cast<uint32_t>(budget.dtype)) << name;
    const TensorView vr = tensor_view(*ref, *tr);
    const TensorView vq = tensor_view(*q, *tq);
    std::vector<float> a(vr.cols()), b(vr.cols());
    double max_w = 0, max_err = 0;
    for (int64_t r = 0; r < vr.rows(); ++r) {
      kernels::dequantize_row(vr.dtype, vr.row(r), a.data(), vr.cols());
      kernels::dequantize_row(vq.dtype, vq.row(r), b.data(), vq.cols());
      for (int64_t i = 0; i < vr.cols(); ++i) {
        max_w = std::max(max_w, static_cast<double>(std::fabs(a[i])));
        max_err = std::max(max_err, static_cast<double>(std::fabs(a[i] - b[i])));
      }
    }
    std::printf("[measured] %s %s %s: max |err| / max |w| = %.3g\n", synth::family_name(family),
                dtype_name(static_cast<uint32_t>(budget.dtype)).c_str(), name, max_err / max_w);
    EXPECT_LE(max_err / max_w, budget.max_weight_err) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Quant,
                         ::testing::Combine(::testing::Values(Family::kLlama, Family::kGemma3),
                                            ::testing::ValuesIn(kBudgets)),
                         [](const auto& info) {
                           return std::string(synth::family_name(std::get<0>(info.param))) + "_" +
                                  dtype_name(static_cast<uint32_t>(std::get<1>(info.param).dtype));
                         });

// og-synth's q4_k_m: the mix's dtype per tensor (8 layers: layers 0, 3, 6 and 7
// get more bits), the same bytes as `offgraph quantize ... q4_k_m` writes from
// the F32 twin, and a model that runs close to the F32 one.
TEST(QuantMix, SynthQ4KmIsWhatQuantizeWritesFromTheF32Twin) {
  synth::SynthSpec spec = quant_spec(Family::kLlama, DType::Q4_K);
  spec.n_layers = 8;
  spec.weight_mix = true;
  const std::string mixed = test::synth_path(spec, false, "q4_k_m-llama8");
  synth::SynthSpec flat = spec;
  flat.weight_dtype = DType::F32;
  flat.weight_mix = false;
  const std::string f32 = test::synth_path(flat, false, "f32-llama8");
  test::TempDir dir;
  ConvertOptions o;
  ASSERT_TRUE(weight_type_from_name("q4_k_m", &o.type));
  quantize_gguf(f32, dir.path("q.gguf"), o);

  std::unique_ptr<GgufFile> a = GgufFile::open(mixed);
  std::unique_ptr<GgufFile> b = GgufFile::open(dir.path("q.gguf"));
  EXPECT_EQ(*a->get_int("general.file_type"), 15);
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (const TensorInfo& t : a->tensors()) {
    const TensorInfo* u = b->find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(t.type_name, u->type_name) << t.name;
    ASSERT_EQ(t.nbytes, u->nbytes) << t.name;
    EXPECT_EQ(std::memcmp(t.data, u->data, t.nbytes), 0) << t.name;
  }
  auto type_of = [&](const std::string& n) { return a->find(n)->type_name; };
  ASSERT_FALSE(spec.tied);
  EXPECT_EQ(type_of("output.weight"), "q6_k");
  EXPECT_EQ(type_of("token_embd.weight"), "q4_k");  // untied: an input table only
  EXPECT_EQ(type_of("blk.0.attn_norm.weight"), "f32");
  for (int l = 0; l < 8; ++l) {
    const bool more = l == 0 || l == 3 || l == 6 || l == 7;
    const std::string blk = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(type_of(blk + "attn_v.weight"), more ? "q6_k" : "q4_k") << l;
    EXPECT_EQ(type_of(blk + "ffn_down.weight"), more ? "q6_k" : "q4_k") << l;
    for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(type_of(blk + n), "q4_k") << blk << n;
  }

  std::unique_ptr<Model> ref = Model::load(f32);
  std::unique_ptr<Model> q = Model::load(mixed);
  const std::vector<int32_t> toks = test::test_tokens(32, ref->n_vocab(), 5);
  auto cr = make_kv_cache(KvKind::kReference, ref->kv_geometry(), KvPolicy{});
  auto cq = make_kv_cache(KvKind::kReference, q->kv_geometry(), KvPolicy{});
  const std::vector<float> lr = test::all_logits(*ref, *cr, toks, 32);
  const std::vector<float> lq = test::all_logits(*q, *cq, toks, 32);
  const int64_t V = ref->n_vocab();
  double kl_sum = 0;
  for (size_t t = 0; t < toks.size(); ++t) {
    const std::vector<double> p = softmax_d(lr.data() + t * V, V), r = softmax_d(lq.data() + t * V, V);
    for (int64_t i = 0; i < V; ++i) kl_sum += p[i] * (std::log(p[i]) - std::log(r[i]));
  }
  std::printf("[measured] llama q4_k_m (8 layers): mean KL %.3g\n", kl_sum / toks.size());
  EXPECT_LE(kl_sum / toks.size(), 0.15);  // the Q4_K budget above: the mix only adds bits
}

}  // namespace
}  // namespace og
