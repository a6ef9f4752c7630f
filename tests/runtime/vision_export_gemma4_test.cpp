// export --mmproj-out of an HF Gemma 4 vision checkpoint (issue 48): the
// directory (og-synth's Gemma 4 text model, its tokenizer with Gemma 4's image
// tokens, a tiny tower from the towers' fixture) exported to a text GGUF and
// a gemma4v mmproj (export_hf_gemma4_mmproj) loads through --mmproj to the
// rows the directory's own tower gives, within f32 rounding (the patch weight
// is reordered into the conv layout, so sums may round differently).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "base/error.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/model_source.h"
#include "format/safetensors.h"
#include "model/gguf_convert.h"
#include "model/mmproj_export_gemma4.h"
#include "model/vision_towers_fixture.h"
#include "runtime/run_setup.h"
#include "runtime/vision_model.h"
#include "synth/synth.h"
#include "synth/synth_internal.h"
#include "temp_dir.h"
#include "tokenizer/gguf_vocab_export.h"
#include "vision/image.h"
#include "vision_export_util.h"

namespace og {
namespace {

using test::export_text_f32;

LoadedModel load(const std::string& model, const std::string& mmproj = "") {
  return test::load_with_mmproj(model, mmproj);
}
std::string error_of(const std::function<void()>& f) { return test::export_error_of(f); }
vision::Image picture(int w, int h, int seed) { return test::export_picture(w, h, seed); }

// og-synth's Gemma 4 HF directory with the image tokens and a tiny tower.
void write_gemma4_vision_dir(const std::string& hf) {
  synth::SynthSpec g4 = synth::tiny_spec(synth::Family::kGemma4);
  synth::write_hf(g4, hf);
  g4.vision = true;  // the tokenizer gains <|image>, <|image|>, <image|>
  synth::write_gemma4_hf_tokenizer(g4, hf);
  Gemma4VisionConfig c = test::gemma4_tiny_config();
  c.text_hidden = g4.d_model;
  c.position_table = 64;  // 280 soft tokens (no processor settings, and an mmproj's budget) of 4-pixel patches
  test::MemorySource tower;
  test::add_gemma4_tower(tower, c, 11);
  std::vector<SafetensorsTensor> all;
  {
    const std::unique_ptr<SafetensorsSource> text = SafetensorsSource::open_file(hf + "/model.safetensors");
    for (const TensorInfo& t : text->tensors())
      if (t.name.rfind("model.vision_tower.", 0) != 0)  // og-synth's stand-in patch tensor
        all.push_back({t.name, t.type_name, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes), nullptr});
  }
  for (const TensorInfo& t : tower.tensors())
    all.push_back({t.name, "F32", t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes), nullptr});
  write_safetensors(hf + "/model.safetensors", all);
  nlohmann::json cfg = read_json_file(hf + "/config.json");
  cfg["vision_config"] = nlohmann::json::parse(R"({"model_type": "gemma4_vision", "hidden_size": 32,
      "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "head_dim": 8, "patch_size": 4, "pooling_kernel_size": 2, "position_embedding_size": 64,
      "rms_norm_eps": 0.05, "standardize": true, "use_clipped_linears": true})");
  std::ofstream(hf + "/config.json") << cfg.dump(2);
}

TEST(VisionExportGemma4, HfDirectoryToGgufAndMmprojGivesItsRows) {
  test::TempDir dir;
  const std::string hf = dir.path("hf"), text = dir.path("g4.gguf"), mmproj = dir.path("g4-mmproj.gguf");
  write_gemma4_vision_dir(hf);
  const std::shared_ptr<const ModelSource> src = ModelSource::open(hf);
  EXPECT_TRUE(hf_is_gemma4(*src));
  export_text_f32(*src, text);
  MmprojWriteOptions mo;
  mo.matrices = DType::F32;
  const Gemma4VisionConfig c = export_hf_gemma4_mmproj(*src, mmproj, mo, /*overwrite=*/false);
  EXPECT_EQ(c.n_layers, 2);
  const LoadedModel own = load(hf);
  const LoadedModel exported = load(text, mmproj);
  ASSERT_TRUE(own.vision);
  ASSERT_TRUE(exported.vision);
  EXPECT_EQ(exported.vision->projector, "gemma4v");
  EXPECT_EQ(exported.vision->tokens.placeholder, own.vision->tokens.placeholder);
  EXPECT_EQ(exported.vision->tokens.begin, own.vision->tokens.begin);
  for (const vision::Image& im : {picture(40, 30, 1), picture(20, 60, 2)}) {
    const std::vector<float> a = exported.vision->encode(im).rows, b = own.vision->encode(im).rows;
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::abs(b[i]))) << i;
  }
  // A grouped tower (4 heads, 2 kv heads) states its kv heads, which llama.cpp
  // needs to load it; a file whose key disagrees with attn_k's rows is refused.
  {
    const std::unique_ptr<GgufFile> f = GgufFile::open(mmproj);
    EXPECT_EQ(f->get_int("clip.vision.attention.head_count_kv").value_or(0), 2);
    GgufWriter w;
    for (const auto& [key, value] : f->metadata())
      if (key != "general.alignment") w.set(key, value);
    w.set("clip.vision.attention.head_count_kv", GgufValue::make_u32(1));
    for (const TensorInfo& t : f->tensors())
      w.add_tensor(t.name, static_cast<DType>(t.type_id), t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes));
    w.write(dir.path("bad-kv.gguf"));
  }
  EXPECT_NE(error_of([&] { load(text, dir.path("bad-kv.gguf")); }).find("head_count_kv is 1 but"), std::string::npos);
  // An existing output is refused unless overwriting; f16 matrices stay close.
  EXPECT_NE(error_of([&] { export_hf_gemma4_mmproj(*src, mmproj, mo, false); }).find("already exists"),
            std::string::npos);
  mo.matrices = DType::F16;
  export_hf_gemma4_mmproj(*src, mmproj, mo, /*overwrite=*/true);
  const LoadedModel half = load(text, mmproj);
  const vision::Image im = picture(40, 30, 1);
  const std::vector<float> a = half.vision->encode(im).rows, b = own.vision->encode(im).rows;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-2 * (1 + std::abs(b[i]))) << i;
}

TEST(VisionExportGemma4, OgSynthsHfDirectoryAndItsExportGiveTheSameRows) {
  // og-synth --family gemma4 --vision --format hf: the tower in the directory, its
  // processor's 280-token budget; the export's mmproj assumes the same budget.
  test::TempDir dir;
  synth::SynthSpec g4 = synth::tiny_spec(synth::Family::kGemma4);
  g4.vision = true;
  const std::string hf = dir.path("hf"), text = dir.path("g4.gguf"), mmproj = dir.path("g4-mmproj.gguf");
  synth::write_hf(g4, hf);
  const std::shared_ptr<const ModelSource> src = ModelSource::open(hf);
  export_text_f32(*src, text);
  MmprojWriteOptions mo;
  mo.matrices = DType::F32;
  export_hf_gemma4_mmproj(*src, mmproj, mo, false);
  const LoadedModel own = load(hf), exported = load(text, mmproj);
  ASSERT_TRUE(own.vision);
  ASSERT_TRUE(exported.vision);
  EXPECT_EQ(own.vision->tokens_per_image, 280);
  const vision::Image im = picture(40, 30, 5);
  const std::vector<float> a = exported.vision->encode(im).rows, b = own.vision->encode(im).rows;
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::abs(b[i]))) << i;
  // og-synth's own mmproj of the same spec holds the same tower: the same rows.
  synth::write_mmproj(g4, dir.path("synth-mmproj.gguf"));
  EXPECT_TRUE(load(text, dir.path("synth-mmproj.gguf")).vision->encode(im).rows == a);
}

TEST(VisionExportGemma4, ADirectoryWithoutItsTowerIsRefusedBeforeWriting) {
  // og-synth's text-only Gemma 4 directory: a stub vision_config and a stand-in patch tensor, no tower.
  test::TempDir dir;
  synth::write_hf(synth::tiny_spec(synth::Family::kGemma4), dir.path("hf"));
  const std::shared_ptr<const ModelSource> src = ModelSource::open(dir.path("hf"));
  ASSERT_TRUE(hf_is_gemma4(*src));
  const std::string e = error_of([&] { export_hf_gemma4_mmproj(*src, dir.path("p.gguf"), MmprojWriteOptions{}, false); });
  EXPECT_NE(e, "(no error)");
  EXPECT_FALSE(std::ifstream(dir.path("p.gguf")).good()) << e;
}

}  // namespace
}  // namespace og
