// The per-tensor dtype rules of the weight types (model/quant_mix.h), on names
// alone: the q4_k_m / q5_k_m / q3_k_m / iq4_xs_m tables, the 80-layer attn_v
// rule, the fallbacks for rows that are not whole blocks, and the type names.
#include "model/quant_mix.h"

#include <gtest/gtest.h>

#include <string>

namespace og {
namespace {

WeightType type(const std::string& name) {
  WeightType t;
  EXPECT_TRUE(weight_type_from_name(name, &t)) << name;
  return t;
}

std::string pick_name(TensorTypePicker& p, const std::string& name, int64_t cols = 4096) {
  return dtype_name(static_cast<uint32_t>(p.pick(name, cols)));
}

TEST(QuantMix, Q4KMPromotesTheLayersTheTableLists) {
  TensorTypePicker p(type("q4_k_m"), 32, 32, true);
  std::string v, down;
  for (int l = 0; l < 32; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    v += pick_name(p, b + "attn_v.weight") == "q6_k" ? "6" : "4";
    down += pick_name(p, b + "ffn_down.weight") == "q6_k" ? "6" : "4";
    EXPECT_EQ(pick_name(p, b + "attn_q.weight"), "q4_k");
    EXPECT_EQ(pick_name(p, b + "ffn_up.weight"), "q4_k");
  }
  // 32 layers: the first and last 4, and every third from layer 6.
  EXPECT_EQ(v, "66664464464464464464464464466666");
  EXPECT_EQ(down, v);
  EXPECT_EQ(pick_name(p, "output.weight"), "q6_k");
  EXPECT_EQ(pick_name(p, "token_embd.weight"), "q4_k");
  EXPECT_EQ(p.fallbacks(), 0);
}

TEST(QuantMix, TheOutputRuleAndThe80LayerRule) {
  TensorTypePicker tied(type("q5_k_m"), 2, 2, false);
  EXPECT_EQ(pick_name(tied, "token_embd.weight"), "q6_k");
  EXPECT_EQ(pick_name(tied, "token_embd.weight", 96), "q8_0");  // rows not whole super-blocks
  TensorTypePicker big(type("q4_k_m"), 80, 80, true);
  EXPECT_EQ(pick_name(big, "blk.0.attn_v.weight"), "q6_k");
  EXPECT_EQ(pick_name(big, "blk.1.attn_v.weight"), "q6_k");
  for (int l = 2; l < 10; ++l) big.pick("blk." + std::to_string(l) + ".attn_v.weight", 4096);
  EXPECT_EQ(pick_name(big, "blk.10.attn_v.weight"), "q5_k");  // not promoted: Q4_K raised to Q5_K
  EXPECT_EQ(pick_name(big, "blk.11.attn_v.weight"), "q5_k");
  EXPECT_EQ(pick_name(big, "blk.12.attn_v.weight"), "q6_k");  // (12 - 80/8) % 3 == 2
}

TEST(QuantMix, FallbacksAndFlatTypes) {
  TensorTypePicker p(type("q4_k_m"), 4, 4, true);
  EXPECT_EQ(pick_name(p, "blk.0.attn_q.weight", 64), "q5_0");
  EXPECT_EQ(pick_name(p, "blk.0.attn_v.weight", 64), "q5_0");
  EXPECT_EQ(pick_name(p, "blk.1.attn_v.weight", 64), "q5_0");
  EXPECT_EQ(pick_name(p, "blk.2.attn_v.weight", 64), "q8_0");  // promoted (4 layers: 2 and 3): Q6_K -> Q8_0
  EXPECT_EQ(pick_name(p, "blk.0.ffn_down.weight", 172), "f16");
  EXPECT_EQ(p.fallbacks(), 5);
  TensorTypePicker q5(type("q5_k"), 4, 4, true);
  EXPECT_EQ(pick_name(q5, "blk.0.attn_v.weight", 64), "q5_1");
  EXPECT_EQ(pick_name(q5, "output.weight"), "q5_k");  // flat types leave the output alone
  TensorTypePicker q8(type("Q8_0"), 4, 4, true);
  EXPECT_EQ(pick_name(q8, "blk.0.attn_q.weight", 48), "f16");
  WeightType t;
  EXPECT_FALSE(weight_type_from_name("q3_k_l", &t));
  EXPECT_EQ(weight_type_names().size(), 20u);
  EXPECT_EQ(type("q3_k_m").file_type, 12u);
  EXPECT_EQ(type("iq4_xs_m").file_type, 30u);
  EXPECT_EQ(type("MXFP4").base, DType::MXFP4);
  EXPECT_EQ(type("q4_k_m").file_type, 15u);
  EXPECT_EQ(type("q5_k_m").file_type, 17u);
}

// llama.cpp's Q3_K_M (docs/export-quantize.md): attn_v Q5_K for the first
// two then Q4_K, ffn_down Q5_K in the first sixteenth then Q4_K, attn_output
// and attn_qkv Q4_K, the output Q6_K, everything else Q3_K.
TEST(QuantMix, Q3KMFollowsLlamaCppPreset) {
  TensorTypePicker p(type("q3_k_m"), 32, 32, true, 4);
  EXPECT_EQ(pick_name(p, "token_embd.weight"), "q3_k");
  EXPECT_EQ(pick_name(p, "output.weight"), "q6_k");
  EXPECT_EQ(pick_name(p, "blk.0.attn_v.weight"), "q5_k");
  EXPECT_EQ(pick_name(p, "blk.1.attn_v.weight"), "q5_k");
  EXPECT_EQ(pick_name(p, "blk.2.attn_v.weight"), "q4_k");
  EXPECT_EQ(pick_name(p, "blk.1.ffn_down.weight"), "q5_k");
  EXPECT_EQ(pick_name(p, "blk.2.ffn_down.weight"), "q4_k");
  EXPECT_EQ(pick_name(p, "blk.5.attn_output.weight"), "q4_k");
  EXPECT_EQ(pick_name(p, "blk.5.attn_qkv.weight"), "q4_k");
  for (const char* n : {"blk.5.attn_q.weight", "blk.5.attn_k.weight", "blk.5.ffn_up.weight", "blk.5.ffn_gate.weight"})
    EXPECT_EQ(pick_name(p, n), "q3_k") << n;
  EXPECT_EQ(pick_name(p, "blk.5.attn_q.weight", 96), "iq4_nl");  // rows not whole 256-blocks
  EXPECT_EQ(pick_name(p, "blk.5.attn_q.weight", 48), "f16");
  TensorTypePicker moe(type("q3_k_m"), 32, 32, true, 4, 8);  // 8 experts: attn_v / attn_k Q8_0, attn_output Q5_K
  EXPECT_EQ(pick_name(moe, "blk.3.attn_v.weight"), "q8_0");
  EXPECT_EQ(pick_name(moe, "blk.3.attn_k.weight"), "q8_0");
  EXPECT_EQ(pick_name(moe, "blk.3.attn_output.weight"), "q5_k");
  TensorTypePicker big(type("q3_k_m"), 80, 80, true, 8);  // the 70B class: attn_v Q5_K throughout
  for (int l = 0; l < 4; ++l) EXPECT_EQ(pick_name(big, "blk." + std::to_string(l) + ".attn_v.weight"), "q5_k");
}

// llama.cpp's IQ4_XS: attn_v Q5_K when 4 or more query heads share a KV
// head, ffn_down Q5_K in the first eighth of the layers, the output Q6_K.
TEST(QuantMix, IQ4XSFollowsLlamaCppPreset) {
  TensorTypePicker p(type("iq4_xs_m"), 32, 32, false, 4);
  EXPECT_EQ(pick_name(p, "token_embd.weight"), "q6_k");  // tied: it is the output
  EXPECT_EQ(pick_name(p, "blk.0.attn_v.weight"), "q5_k");
  EXPECT_EQ(pick_name(p, "blk.3.ffn_down.weight"), "q5_k");
  EXPECT_EQ(pick_name(p, "blk.4.ffn_down.weight"), "iq4_xs");
  EXPECT_EQ(pick_name(p, "blk.4.attn_output.weight"), "iq4_xs");
  EXPECT_EQ(pick_name(p, "blk.4.attn_q.weight"), "iq4_xs");
  EXPECT_EQ(pick_name(p, "blk.4.attn_q.weight", 2080), "iq4_nl");
  TensorTypePicker mha(type("iq4_xs_m"), 32, 32, true, 1);
  EXPECT_EQ(pick_name(mha, "blk.0.attn_v.weight"), "iq4_xs");
  EXPECT_EQ(pick_name(mha, "output.weight", 4096 + 32), "q8_0");
  TensorTypePicker flat(type("iq4_xs"), 32, 32, true, 4);
  EXPECT_EQ(pick_name(flat, "blk.0.attn_v.weight"), "iq4_xs");
  EXPECT_EQ(pick_name(flat, "output.weight"), "iq4_xs");
}

}  // namespace
}  // namespace og
