// export --mmproj-out of an HF LLaVA checkpoint (issue 48): og-synth's
// LlavaForConditionalGeneration directory (--family llama --vision --format
// hf: a tiny CLIP tower read at layer -2, with its last layer and
// post-LayerNorm, and the MLP projector) exported to a text GGUF and an mlp
// mmproj (export_hf_llava_mmproj) loads through --mmproj to the rows the
// directory's own tower gives for a square picture, bit for bit in f32 (the
// same tensors, the same kernels). A non-square picture differs as
// documented: the directory follows its CLIPImageProcessor (shortest edge,
// centre crop), the mmproj llama.cpp's letterbox.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "base/error.h"
#include "format/hf_config.h"
#include "format/model_source.h"
#include "format/safetensors.h"
#include "model/gguf_convert.h"
#include "model/mmproj_gguf_llava.h"
#include "runtime/run_setup.h"
#include "runtime/vision_model.h"
#include "synth/synth.h"
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

synth::SynthSpec llava_spec() {
  synth::SynthSpec s = synth::tiny_spec(synth::Family::kLlama);
  s.vision = true;
  return s;
}

void export_both(const std::string& hf, const std::string& text, const std::string& mmproj, DType matrices,
                 bool overwrite) {
  const std::shared_ptr<const ModelSource> src = ModelSource::open(hf);
  ASSERT_TRUE(hf_is_llava(*src));
  if (!overwrite) export_text_f32(*src, text);
  MmprojWriteOptions mo;
  mo.matrices = matrices;
  const ClipTowerConfig c = export_hf_llava_mmproj(*src, mmproj, mo, overwrite);
  EXPECT_EQ(c.n_layers, 3);
  EXPECT_EQ(c.feature_layers, 2);
}

TEST(VisionExportLlava, HfDirectoryToGgufAndMmprojGivesItsRows) {
  test::TempDir dir;
  const std::string hf = dir.path("hf"), text = dir.path("l.gguf"), mmproj = dir.path("l-mmproj.gguf");
  synth::write_hf(llava_spec(), hf);
  export_both(hf, text, mmproj, DType::F32, false);
  const LoadedModel own = load(hf);
  const LoadedModel exported = load(text, mmproj);
  ASSERT_TRUE(own.vision);
  ASSERT_TRUE(exported.vision);
  EXPECT_EQ(own.vision->projector, "mlp");
  EXPECT_EQ(exported.vision->projector, "mlp");
  EXPECT_EQ(exported.vision->tokens.placeholder, own.vision->tokens.placeholder);
  EXPECT_EQ(exported.vision->tokens_per_image, 16);
  EXPECT_EQ(own.vision->tokens_per_image, 16);
  // Square pictures (any size): the same pixels either way, so the same rows.
  for (const vision::Image& im : {picture(28, 28, 1), picture(50, 50, 2)}) {
    const TowerImage a = exported.vision->encode(im), b = own.vision->encode(im);
    ASSERT_EQ(a.rows.size(), b.rows.size());
    ASSERT_FALSE(a.rows.empty());
    EXPECT_TRUE(a.rows == b.rows);
    EXPECT_EQ(a.hash, b.hash);
  }
  // A wide one: cropped by the directory's processor, letterboxed by the mmproj's rule.
  EXPECT_FALSE(exported.vision->encode(picture(60, 30, 3)).rows == own.vision->encode(picture(60, 30, 3)).rows);
  // f16 matrices stay close; an existing output is refused unless overwriting.
  EXPECT_NE(error_of([&] {
              export_hf_llava_mmproj(*ModelSource::open(hf), mmproj, MmprojWriteOptions{}, false);
            }).find("already exists"),
            std::string::npos);
  export_both(hf, text, mmproj, DType::F16, true);
  const LoadedModel half = load(text, mmproj);
  const std::vector<float> a = half.vision->encode(picture(28, 28, 1)).rows,
                           b = own.vision->encode(picture(28, 28, 1)).rows;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-2 * (1 + std::abs(b[i]))) << i;
}

TEST(VisionExportLlava, TheMmprojHoldsTheTowerCutAtItsFeatureLayer) {
  test::TempDir dir;
  synth::write_hf(llava_spec(), dir.path("hf"));
  MmprojWriteOptions mo;
  mo.matrices = DType::F32;
  export_hf_llava_mmproj(*ModelSource::open(dir.path("hf")), dir.path("p.gguf"), mo, false);
  const std::unique_ptr<GgufFile> f = GgufFile::open(dir.path("p.gguf"));
  EXPECT_EQ(f->get_string("clip.projector_type").value_or(""), "mlp");
  EXPECT_EQ(f->get_int("clip.vision.block_count").value_or(0), 2);
  EXPECT_FALSE(f->get_bool("clip.use_gelu").value_or(true));  // quick GELU
  EXPECT_NE(f->find("v.blk.1.ffn_up.weight"), nullptr);
  EXPECT_EQ(f->find("v.blk.2.attn_q.weight"), nullptr);  // the layer past the features
  EXPECT_EQ(f->find("v.post_ln.weight"), nullptr);
  EXPECT_NE(f->find("mm.2.bias"), nullptr);
  EXPECT_EQ(f->find("v.blk.0.attn_q.weight")->type_id, static_cast<uint32_t>(DType::F32));
  const std::optional<std::vector<double>> mean = f->get_float_array("clip.vision.image_mean");
  ASSERT_TRUE(mean.has_value());
  EXPECT_NEAR((*mean)[0], 0.48145466, 1e-7);
  // The same spec's og-synth mmproj is this file's tower (the same names, shapes and values).
  synth::write_mmproj(llava_spec(), dir.path("s.gguf"));
  const std::unique_ptr<GgufFile> s = GgufFile::open(dir.path("s.gguf"));
  ASSERT_EQ(s->tensors().size(), f->tensors().size());
  for (const TensorInfo& t : s->tensors()) {
    const TensorInfo* u = f->find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    ASSERT_EQ(u->nbytes, t.nbytes) << t.name;
    EXPECT_TRUE(std::equal(t.data, t.data + t.nbytes, u->data)) << t.name;
  }
}

TEST(VisionExportLlava, APartialTowerOrAnUnwritableOneIsRefusedBeforeWriting) {
  test::TempDir dir;
  const std::string hf = dir.path("hf");
  synth::write_hf(llava_spec(), hf);
  // Drop the projector's second matrix: named, nothing written.
  std::vector<SafetensorsTensor> kept;
  {
    const std::unique_ptr<SafetensorsSource> st = SafetensorsSource::open_file(hf + "/model.safetensors");
    for (const TensorInfo& t : st->tensors())
      if (t.name != "model.multi_modal_projector.linear_2.weight")
        kept.push_back({t.name, t.type_name, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes), nullptr});
  }
  write_safetensors(hf + "/model.safetensors", kept);
  std::string e = error_of([&] { hf_llava_mmproj_config(*ModelSource::open(hf)); });
  EXPECT_NE(e.find("linear_2.weight"), std::string::npos) << e;
  e = error_of([&] { export_hf_llava_mmproj(*ModelSource::open(hf), dir.path("p.gguf"), MmprojWriteOptions{}, false); });
  EXPECT_NE(e.find("linear_2.weight"), std::string::npos) << e;
  EXPECT_FALSE(std::ifstream(dir.path("p.gguf")).good());
  // The class token kept ("full"): an mlp mmproj cannot say so.
  const std::string hf2 = dir.path("hf2");
  synth::write_hf(llava_spec(), hf2);
  nlohmann::json cfg = read_json_file(hf2 + "/config.json");
  cfg["vision_feature_select_strategy"] = "full";
  std::ofstream(hf2 + "/config.json") << cfg.dump(2);
  e = error_of([&] { hf_llava_mmproj_config(*ModelSource::open(hf2)); });
  EXPECT_NE(e.find("vision_feature_select_strategy \"full\""), std::string::npos) << e;
}

}  // namespace
}  // namespace og
