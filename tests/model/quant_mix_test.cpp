// The per-tensor dtype rules of the weight types (model/quant_mix.h), on names
// alone: README.md's q4_k_m / q5_k_m table, the 80-layer attn_v rule, the
// fallbacks for rows that are not whole blocks, and the type names.
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
  EXPECT_FALSE(weight_type_from_name("q3_k_m", &t));
  EXPECT_EQ(weight_type_names().size(), 13u);
  EXPECT_EQ(type("q4_k_m").file_type, 15u);
  EXPECT_EQ(type("q5_k_m").file_type, 17u);
}

}  // namespace
}  // namespace og
