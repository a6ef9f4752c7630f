// og-synth's GGUF writer takes every _m mix (q4_k_m, q5_k_m, q3_k_m,
// iq4_xs_m): the file type and the per-tensor dtypes are the mix's (as
// `quantize` picks them), and the file loads and runs.
#include <gtest/gtest.h>

#include <cmath>

#include "format/gguf.h"
#include "model/quant_mix.h"
#include "synth_fixture.h"

namespace og {
namespace {

TEST(SynthMix, EveryMixIsWritten) {
  struct Case {
    const char* mix;
    uint32_t file_type;
    DType attn_v1, attn_q0;  // blk.1.attn_v.weight (promoted) and blk.0.attn_q.weight (the base)
  };
  for (const Case& k : {Case{"q4_k_m", 15, DType::Q6_K, DType::Q4_K}, Case{"q5_k_m", 17, DType::Q6_K, DType::Q5_K},
                        Case{"q3_k_m", 12, DType::Q5_K, DType::Q3_K},
                        Case{"iq4_xs_m", 30, DType::IQ4_XS, DType::IQ4_XS}}) {
    WeightType t;
    ASSERT_TRUE(weight_type_from_name(k.mix, &t)) << k.mix;
    synth::SynthSpec s = synth::tiny_spec(synth::Family::kLlama);
    s.d_model = 256;  // rows of whole 256-blocks, so the K-quants and IQ4_XS apply
    s.head_dim = 64;
    s.d_ff = 256;
    s.weight_dtype = t.base;
    s.weight_mix = true;
    const std::string path = test::synth_path(s, false, std::string("llama-") + k.mix);
    std::unique_ptr<GgufFile> f = GgufFile::open(path);
    EXPECT_EQ(f->get_int("general.file_type"), std::optional<int64_t>(k.file_type)) << k.mix;
    EXPECT_EQ(f->find("blk.1.attn_v.weight")->type_id, static_cast<uint32_t>(k.attn_v1)) << k.mix;
    EXPECT_EQ(f->find("blk.0.attn_q.weight")->type_id, static_cast<uint32_t>(k.attn_q0)) << k.mix;
    std::unique_ptr<Model> m = Model::load(path);
    auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
    for (float x : test::all_logits(*m, *c, test::test_tokens(6, m->n_vocab()), 6))
      ASSERT_TRUE(std::isfinite(x)) << k.mix;
  }
}

}  // namespace
}  // namespace og
