// Gemma 3's vision tower (model/vision_tower.h) against its plain twin
// (naive_vision_tower.h) on tiny random towers in memory under the HF names,
// the pooling rule, the config's reading, and bad inputs.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>

#include "format/gguf.h"
#include "kernels/kernel_table.h"
#include "model/vision_tower.h"
#include "model_test_util.h"
#include "naive_vision_tower.h"
#include "vision_tower_fixture.h"

namespace og {
namespace {

using test::MemorySource;
using test::add_tower;
using test::random_values;
using test::tiny_config;

double max_rel(const std::vector<float>& a, const std::vector<double>& b) {
  std::vector<float> bf(b.begin(), b.end());
  return test::max_rel_err(a, bf);
}

TEST(VisionTower, EqualsThePlainTwinOnEveryIsa) {
  // Heads of 8 values, and of 72 (Gemma 3's head width: vector tails in the attend kernels).
  VisionTowerConfig wide_heads = tiny_config();
  wide_heads.hidden = 144;
  wide_heads.n_heads = 2;
  for (const VisionTowerConfig& c : {tiny_config(), wide_heads}) {
    MemorySource src;
    add_tower(src, c, 7);
    std::mt19937 rng(3);
    const std::vector<float> pixels = random_values(rng, 3 * c.image_size * c.image_size, -1.0f, 1.0f);
    const std::vector<double> want = test::naive_vision_tower(c, src, pixels);
    const VisionTower tower(c, bind_gemma3_vision(c, src));
    const kernels::Isa was = kernels::set_active_isa(kernels::available_isas().front());
    for (kernels::Isa isa : kernels::available_isas()) {
      kernels::set_active_isa(isa);
      const std::vector<float> got = tower.encode(pixels);
      ASSERT_EQ(got.size(), static_cast<size_t>(9 * 24)) << kernels::isa_str(isa);
      EXPECT_LT(max_rel(got, want), 2e-5) << kernels::isa_str(isa) << " head_dim " << c.head_dim();
    }
    kernels::set_active_isa(was);
  }
}

TEST(VisionTower, EqualsThePlainTwinOverManyQueryAndKeyBlocks) {
  // 24x24 = 576 patches: the attention's queries in 9 blocks and its keys in
  // three folds (two of 256, one of 64) with the online softmax rescaling
  // between them, and the matmuls' activations in several chunks of rows.
  VisionTowerConfig c = tiny_config();
  c.image_size = 14 * 24;
  c.hidden = 72;  // one head of Gemma 3's width
  c.n_heads = 1;
  c.n_layers = 1;
  c.mm_tokens_per_image = 36;
  MemorySource src;
  add_tower(src, c, 17);
  std::mt19937 rng(19);
  const std::vector<float> pixels = random_values(rng, 3 * c.image_size * c.image_size, -1.0f, 1.0f);
  const std::vector<double> want = test::naive_vision_tower(c, src, pixels);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const kernels::Isa was = kernels::set_active_isa(kernels::available_isas().front());
  for (kernels::Isa isa : kernels::available_isas()) {
    kernels::set_active_isa(isa);
    const std::vector<float> got = tower.encode(pixels);
    ASSERT_EQ(got.size(), static_cast<size_t>(36 * 24)) << kernels::isa_str(isa);
    EXPECT_LT(max_rel(got, want), 2e-5) << kernels::isa_str(isa);
  }
  kernels::set_active_isa(was);
}

TEST(VisionTower, Q8_0MatricesAreRepackedAtLoadAndFollowTheTwin) {
  // The layers' matrices stored as q8_0 (x86 tables repack them to Q8_0_R
  // at construction); the twin reads their exact values dequantized, so
  // only the activations' int8 rounding in the matmuls is left between them.
  VisionTowerConfig c = tiny_config();
  c.intermediate = 64;  // whole q8_0 blocks (the patch conv's 588 columns stay f32)
  MemorySource f32src;
  add_tower(f32src, c, 23);
  std::vector<std::vector<uint8_t>> q8;
  MemorySource src;
  for (const TensorInfo& t : f32src.tensors()) {
    const float* f = reinterpret_cast<const float*>(t.data);
    std::vector<float> v(f, f + t.nbytes / sizeof(float));
    if (t.shape.size() == 2 && t.name.find("encoder.layers.") != std::string::npos) {
      const int64_t rows = t.shape[0], cols = t.shape[1], rb = dtype_row_bytes(DType::Q8_0, cols);
      std::vector<uint8_t>& b = q8.emplace_back(static_cast<size_t>(rows * rb));
      for (int64_t r = 0; r < rows; ++r) {
        kernels::quantize_row(DType::Q8_0, v.data() + r * cols, b.data() + r * rb, cols);
        kernels::dequantize_row(DType::Q8_0, b.data() + r * rb, v.data() + r * cols, cols);
      }
    }
    src.add(t.name, t.shape, std::move(v));
  }
  VisionTowerWeights w = bind_gemma3_vision(c, src);
  size_t next = 0;  // the q8 copies are in the source's order: per layer q, k, v, out, fc1, fc2
  for (VisionLayerWeights& l : w.layers)
    for (TensorView* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.fc1, &l.fc2}) {
      v->data = q8.at(next++).data();
      v->dtype = DType::Q8_0;
    }
  ASSERT_EQ(next, q8.size());
  std::mt19937 rng(29);
  const std::vector<float> pixels = random_values(rng, 3 * c.image_size * c.image_size, -1.0f, 1.0f);
  const std::vector<double> want = test::naive_vision_tower(c, src, pixels);
  const VisionTower tower(c, std::move(w));
  const kernels::Isa was = kernels::set_active_isa(kernels::available_isas().front());
  for (kernels::Isa isa : kernels::available_isas()) {
    kernels::set_active_isa(isa);
    EXPECT_LT(max_rel(tower.encode(pixels), want), 0.03) << kernels::isa_str(isa);
  }
  kernels::set_active_isa(was);
}

TEST(VisionTower, ModelPrefixAndOneTokenPerImage) {
  // transformers v5 saves under "model."; a 28x28 image in 14x14 patches
  // pooled 2x2 to a single token.
  VisionTowerConfig c = tiny_config();
  c.image_size = 28;
  c.mm_tokens_per_image = 1;
  MemorySource src;
  add_tower(src, c, 11, "model.");
  EXPECT_EQ(gemma3_vision_prefix(src), "model.");
  std::mt19937 rng(5);
  const std::vector<float> pixels = random_values(rng, 3 * 28 * 28, -1.0f, 1.0f);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const std::vector<float> got = tower.encode(pixels);
  ASSERT_EQ(got.size(), static_cast<size_t>(24));
  EXPECT_LT(max_rel(got, test::naive_vision_tower(c, src, pixels, "model.")), 2e-5);
}

TEST(VisionTower, EachTokenPoolsItsOwnSquareOfPatches) {
  // One non-zero patch lights exactly the token whose 2x2 square holds it
  // (a zero vector stays zero through the RMSNorm and the projection).
  const VisionTowerConfig c = tiny_config();
  MemorySource src;
  add_tower(src, c, 9);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const int64_t g = c.patches_per_side(), d = c.hidden, th = c.text_hidden;
  for (int64_t py = 0; py < g; ++py)
    for (int64_t px = 0; px < g; ++px) {
      std::vector<float> patches(static_cast<size_t>(c.n_patches() * d), 0.0f);
      for (int64_t e = 0; e < d; ++e) patches[(py * g + px) * d + e] = 1.0f + 0.1f * static_cast<float>(e);
      const std::vector<float> out = tower.project(patches);
      ASSERT_EQ(out.size(), static_cast<size_t>(9 * th));
      const int64_t lit = (py / 2) * 3 + px / 2;
      for (int64_t t = 0; t < 9; ++t) {
        double mag = 0;
        for (int64_t o = 0; o < th; ++o) mag += std::fabs(out[t * th + o]);
        EXPECT_EQ(mag > 0, t == lit) << "patch " << py << "," << px << " token " << t;
      }
    }
}

TEST(VisionTower, ConfigFromTheHfConfig) {
  const nlohmann::json j = nlohmann::json::parse(R"({
    "model_type": "gemma3", "mm_tokens_per_image": 256,
    "text_config": {"hidden_size": 2560, "rms_norm_eps": 1e-6},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 27, "patch_size": 14, "layer_norm_eps": 1e-6}})");
  const VisionTowerConfig c = gemma3_vision_config(j, "config.json");
  EXPECT_EQ(c.hidden, 1152);
  EXPECT_EQ(c.intermediate, 4304);
  EXPECT_EQ(c.n_layers, 27);
  EXPECT_EQ(c.n_heads, 16);
  EXPECT_EQ(c.head_dim(), 72);
  EXPECT_EQ(c.n_patches(), 4096);
  EXPECT_EQ(c.tokens_per_side(), 16);
  EXPECT_EQ(c.text_hidden, 2560);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-6f);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(VisionTower, BadConfigsAreClearErrors) {
  nlohmann::json j = nlohmann::json::parse(R"({"text_config": {"hidden_size": 24},
    "vision_config": {"hidden_size": 32, "image_size": 84, "intermediate_size": 48,
                      "num_attention_heads": 4, "num_hidden_layers": 2, "patch_size": 14}})");
  // Absent, mm_tokens_per_image is transformers' default of 256 (16x16, which a 6x6 grid cannot pool to).
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("mm_tokens_per_image 256 is not"),
            std::string::npos);
  const nlohmann::json none = nlohmann::json::object();
  EXPECT_NE(error_of([&] { gemma3_vision_config(none, "config.json"); }).find("vision_config is missing"),
            std::string::npos);
  j["mm_tokens_per_image"] = 9;
  EXPECT_EQ(gemma3_vision_config(j, "config.json").tokens_per_side(), 3);
  j["mm_tokens_per_image"] = 8;
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("mm_tokens_per_image 8 is not a square"),
            std::string::npos);
  j["mm_tokens_per_image"] = 16;  // a 4x4 token grid does not divide a 6x6 patch grid
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("6x6 patch grid"), std::string::npos);
  j["mm_tokens_per_image"] = 9;
  j["vision_config"]["patch_size"] = 16;
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("patch_size 16 does not divide"),
            std::string::npos);
  j["vision_config"].erase("patch_size");
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("vision_config.patch_size is missing"),
            std::string::npos);
}

TEST(VisionTower, MissingOrMisshapenTensorsAndWrongPixelsAreClearErrors) {
  const VisionTowerConfig c = tiny_config();
  MemorySource empty;
  EXPECT_NE(error_of([&] { bind_gemma3_vision(c, empty); }).find("patch_embedding.weight is missing"),
            std::string::npos);

  // A tower with one layer fewer than the config says: layer 1's first tensor is named.
  VisionTowerConfig one = c;
  one.n_layers = 1;
  MemorySource short_src;
  add_tower(short_src, one, 1);
  EXPECT_NE(error_of([&] { bind_gemma3_vision(c, short_src); })
                .find("vision tensor vision_tower.vision_model.encoder.layers.1.layer_norm1.weight is missing"),
            std::string::npos);

  // Written for another width: the shape is named with the expected one.
  VisionTowerConfig wide = c;
  wide.hidden = 40;
  MemorySource wide_src;
  add_tower(wide_src, wide, 1);
  EXPECT_NE(error_of([&] { bind_gemma3_vision(c, wide_src); })
                .find("has shape [40, 3, 14, 14], expected [32, 3, 14, 14]"),
            std::string::npos);

  MemorySource src;
  add_tower(src, c, 2);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const std::vector<float> small(3 * 28 * 28, 0.0f);
  EXPECT_NE(error_of([&] { tower.encode(small); }).find("expected 84x84 RGB pixels (21168 values), got 2352"),
            std::string::npos);
}

// llama.cpp's names of an HF tower's tensors (mmproj GGUF), fc1 as ffn_up or,
// as older converters wrote it, as ffn_down.
std::string mmproj_name(const std::string& hf, bool legacy_ffn) {
  static const std::pair<const char*, const char*> kMap[] = {
      {"vision_tower.vision_model.embeddings.patch_embedding.", "v.patch_embd."},
      {"vision_tower.vision_model.embeddings.position_embedding.", "v.position_embd."},
      {"vision_tower.vision_model.post_layernorm.", "v.post_ln."},
      {"multi_modal_projector.mm_soft_emb_norm.weight", "mm.soft_emb_norm.weight"},
      {"multi_modal_projector.mm_input_projection_weight", "mm.input_projection.weight"},
      {"vision_tower.vision_model.encoder.layers.", "v.blk."},
      {".layer_norm1.", ".ln1."}, {".layer_norm2.", ".ln2."}, {".self_attn.q_proj.", ".attn_q."},
      {".self_attn.k_proj.", ".attn_k."}, {".self_attn.v_proj.", ".attn_v."}, {".self_attn.out_proj.", ".attn_out."}};
  std::string n = hf;
  for (const auto& [from, to] : kMap) {
    const size_t at = n.find(from);
    if (at != std::string::npos) n.replace(at, std::string(from).size(), to);
  }
  for (const auto& [fc, up_or_down] : {std::pair{".mlp.fc1.", legacy_ffn ? ".ffn_down." : ".ffn_up."},
                                       std::pair{".mlp.fc2.", legacy_ffn ? ".ffn_up." : ".ffn_down."}}) {
    const size_t at = n.find(fc);
    if (at != std::string::npos) n.replace(at, std::string(fc).size(), up_or_down);
  }
  return n;
}

// The HF tower `hf` as an mmproj GGUF (soft norm written as 1 + weight, as
// the converters do). scale_factor 0: the key is left out.
std::vector<uint8_t> mmproj_of(const MemorySource& hf, const VisionTowerConfig& c, bool legacy_ffn,
                               int64_t scale_factor, const std::string& type = "gemma3") {
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("clip"));
  w.set("clip.projector_type", GgufValue::make_string(type));
  w.set("clip.vision.image_size", GgufValue::make_u32(uint32_t(c.image_size)));
  w.set("clip.vision.patch_size", GgufValue::make_u32(uint32_t(c.patch_size)));
  w.set("clip.vision.embedding_length", GgufValue::make_u32(uint32_t(c.hidden)));
  w.set("clip.vision.feed_forward_length", GgufValue::make_u32(uint32_t(c.intermediate)));
  w.set("clip.vision.block_count", GgufValue::make_u32(uint32_t(c.n_layers)));
  w.set("clip.vision.attention.head_count", GgufValue::make_u32(uint32_t(c.n_heads)));
  w.set("clip.vision.projection_dim", GgufValue::make_u32(uint32_t(c.text_hidden)));
  w.set("clip.vision.attention.layer_norm_epsilon", GgufValue::make_f32(c.layer_norm_eps));
  if (scale_factor > 0) w.set("clip.vision.projector.scale_factor", GgufValue::make_u32(uint32_t(scale_factor)));
  for (const TensorInfo& t : hf.tensors()) {
    std::vector<float> v(reinterpret_cast<const float*>(t.data), reinterpret_cast<const float*>(t.data + t.nbytes));
    if (t.name.find("mm_soft_emb_norm") != std::string::npos)
      for (float& x : v) x += 1.0f;
    std::vector<uint8_t> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    w.add_tensor(mmproj_name(t.name, legacy_ffn), DType::F32, t.shape, std::move(bytes));
  }
  return w.serialize();
}

TEST(VisionTower, AnMmprojGgufGivesTheHfTowersRowsBitForBit) {
  const VisionTowerConfig c = tiny_config();
  MemorySource hf;
  add_tower(hf, c, 13);
  std::mt19937 rng(17);
  const std::vector<float> pixels = random_values(rng, 3 * c.image_size * c.image_size, -1.0f, 1.0f);
  const std::vector<float> want = VisionTower(c, bind_gemma3_vision(c, hf)).encode(pixels);
  for (bool legacy : {false, true}) {
    const std::vector<uint8_t> bytes = mmproj_of(hf, c, legacy, 2);
    const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
    const VisionTowerConfig g = gemma3_mmproj_config(*f);
    EXPECT_EQ(g.mm_tokens_per_image, 9);
    EXPECT_EQ(g.text_hidden, c.text_hidden);
    EXPECT_EQ(g.n_patches(), 36);
    EXPECT_EQ(g.layer_norm_eps, 0.05f);
    const std::vector<float> got = VisionTower(g, bind_gemma3_mmproj(g, *f)).encode(pixels);
    EXPECT_TRUE(got == want) << (legacy ? "fc1 as ffn_down" : "fc1 as ffn_up");
  }
}

TEST(VisionTower, BadMmprojFilesAreClearErrors) {
  const VisionTowerConfig c = tiny_config();
  MemorySource hf;
  add_tower(hf, c, 13);
  // Without scale_factor the kernel is Gemma 3's 4, which does not divide a 6x6 grid.
  std::vector<uint8_t> bytes = mmproj_of(hf, c, false, 0);
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  EXPECT_NE(error_of([&] { gemma3_mmproj_config(*f); }).find("scale_factor 4 does not divide the patch grid"),
            std::string::npos);
  bytes = mmproj_of(hf, c, false, 2, "llava");
  f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  EXPECT_NE(error_of([&] { gemma3_mmproj_config(*f); }).find("clip.projector_type is \"llava\"; only gemma3"),
            std::string::npos);
  // An mmproj of a tower with one layer: the config's second layer is named.
  VisionTowerConfig one = c;
  one.n_layers = 1;
  MemorySource short_hf;
  add_tower(short_hf, one, 1);
  bytes = mmproj_of(short_hf, one, false, 2);
  f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  EXPECT_NE(error_of([&] { bind_gemma3_mmproj(c, *f); }).find("vision tensor v.blk.1.ln1.weight is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace og
