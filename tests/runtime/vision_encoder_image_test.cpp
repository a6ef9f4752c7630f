// runtime/vision_encoder_image.h: a decoded image through any tower kind
// (tiny random Gemma 4 and LLaVA towers) into rows and a hash; and --mmproj
// files of those kinds reaching load_model's vision loader.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>

#include "base/error.h"
#include "format/hf_config.h"
#include "format/safetensors.h"
#include "model/vision_encoder.h"
#include "model/vision_mmproj_writers.h"
#include "model/vision_towers_fixture.h"
#include "runtime/run_setup.h"
#include "runtime/vision_encoder_image.h"
#include "synth/synth.h"
#include "temp_dir.h"
#include "vision/preprocess.h"

namespace og {
namespace {

vision::Image picture(int w, int h, int seed) {
  vision::Image im;
  im.width = w;
  im.height = h;
  im.channels = 3;
  im.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = static_cast<uint8_t>((i * 37 + seed * 101) % 251);
  return im;
}

TEST(VisionEncoderImage, AGemma4ImageKeepsItsAspectAndHashesItsPixels) {
  const nlohmann::json j = nlohmann::json::parse(R"({"model_type": "gemma4", "text_config": {"hidden_size": 24},
      "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "patch_size": 4,
      "pooling_kernel_size": 2, "position_embedding_size": 48, "rms_norm_eps": 0.05,
      "standardize": true, "use_clipped_linears": true}})");
  test::MemorySource hf;
  Gemma4VisionConfig c = test::gemma4_tiny_config();
  c.position_table = 48;  // a 40 x 26 patch grid
  test::add_gemma4_tower(hf, c, 3);
  const std::unique_ptr<VisionEncoder> enc = load_vision_encoder(j, "config.json", hf);
  // 280 tokens of 8x8 pixels for a 60 x 40 picture: it is scaled up, keeping 3:2.
  const vision::Image im = picture(60, 40, 1);
  const VisionPixels px = enc->pixels_for(60, 40);
  EXPECT_EQ(px.width, 160);  // floor(60 * sqrt(17920 / 2400) / 8) * 8
  EXPECT_EQ(px.height, 104);
  const TowerImage a = encode_image(*enc, im);
  EXPECT_EQ(a.width, 24);
  EXPECT_EQ(a.n_rows(), enc->tokens_for(px.width, px.height));
  EXPECT_EQ(a.n_rows(), 20 * 13);
  const std::vector<float> pixels = vision::preprocess_image(im, preprocess_config(px));
  EXPECT_TRUE(a.rows == enc->encode(pixels, px.width, px.height));
  EXPECT_EQ(encode_image(*enc, im).hash, a.hash);
  EXPECT_NE(encode_image(*enc, picture(60, 40, 2)).hash, a.hash);
}

TEST(VisionEncoderImage, ALlavaImageIsResizedByItsShortEdgeAndCentreCropped) {
  const nlohmann::json j = nlohmann::json::parse(R"({"model_type": "llava", "vision_config": {
      "hidden_size": 32, "image_size": 28, "intermediate_size": 48, "num_attention_heads": 4,
      "num_hidden_layers": 3, "patch_size": 7, "layer_norm_eps": 0.05}})");
  test::MemorySource hf;
  test::add_llava_tower(hf, test::clip_tiny_config(), 8);
  const std::unique_ptr<VisionEncoder> enc = load_vision_encoder(j, "config.json", hf);
  const vision::Image im = picture(50, 20, 3);
  const TowerImage a = encode_image(*enc, im);
  EXPECT_EQ(a.n_rows(), 16);
  EXPECT_EQ(a.width, 24);
  // CLIPImageProcessor (no settings: LLaVA 1.5's): 50 x 20 -> 70 x 28 -> the middle 28 x 28.
  const vision::Image wide = vision::resize_like_pil(im, 70, 28, vision::Resample::bicubic);
  vision::PreprocessConfig crop = vision::clip_config(28);
  crop.shortest_edge = 0;  // the crop below, then only rescale and normalize
  const std::vector<float> pixels = vision::preprocess_image(vision::center_crop(wide, 28, 28), crop);
  EXPECT_TRUE(a.rows == enc->encode(pixels, 28, 28));
  // Not what a squash to 28 x 28 gives.
  EXPECT_FALSE(a.rows == enc->encode(vision::preprocess_image(im, crop), 28, 28));
}

std::string load_error(const std::string& model, const std::string& mmproj) {
  ModelSetup s;
  s.model = model;
  s.mmproj = mmproj;
  try {
    load_model(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

TEST(VisionEncoderImage, Gemma4vAndMlpMmprojFilesReachTheirTowersFromLoadModel) {
  // og-synth's Gemma 4 (d_model 128) and Llama text models have no image
  // tokens, so a tower of the right width loads and then the first missing
  // token is named; one of another width is refused before that. Either
  // message means the projector type reached model/vision_encoder.h's tower.
  test::TempDir dir;
  const synth::SynthSpec g4 = synth::tiny_spec(synth::Family::kGemma4);
  const synth::SynthSpec llama = synth::tiny_spec(synth::Family::kLlama);
  synth::write_gguf(g4, dir.path("g4.gguf"));
  synth::write_gguf(llama, dir.path("llama.gguf"));
  Gemma4VisionConfig c = test::gemma4_tiny_config();
  c.text_hidden = g4.d_model;
  test::MemorySource g4_tower;
  test::add_gemma4_tower(g4_tower, c, 2);
  write_file(dir.path("g4v.gguf"), test::gemma4_mmproj_of(g4_tower, c));
  EXPECT_NE(load_error(dir.path("g4.gguf"), dir.path("g4v.gguf")).find("the tokenizer has no <|image> token"),
            std::string::npos);
  c.text_hidden = 24;
  test::MemorySource narrow;
  test::add_gemma4_tower(narrow, c, 2);
  write_file(dir.path("narrow.gguf"), test::gemma4_mmproj_of(narrow, c, "gemma4v", "clip.projector_type"));
  EXPECT_NE(load_error(dir.path("g4.gguf"), dir.path("narrow.gguf"))
                .find("the vision tower projects to width 24 but the text model's hidden size is 128"),
            std::string::npos);
  test::MemorySource clip;
  test::add_llava_tower(clip, test::clip_tiny_config(), 4, "", 40, llama.d_model);
  write_file(dir.path("mlp.gguf"), test::llava_mmproj_of(clip, test::clip_tiny_config(), false));
  EXPECT_NE(load_error(dir.path("llama.gguf"), dir.path("mlp.gguf")).find("the tokenizer has no <image> token"),
            std::string::npos);
  // (g4v.gguf names its type under clip.vision.projector_type as the converter
  // does, narrow.gguf under clip.projector_type: both are read.)
  // A gemma4v tower with a Llama text model: the family is named.
  EXPECT_NE(load_error(dir.path("llama.gguf"), dir.path("g4v.gguf")).find("needs a gemma4 text model"),
            std::string::npos);
}

TEST(VisionEncoderImage, ImageProcessorSettingsComeFromEitherFile) {
  test::TempDir dir;
  EXPECT_TRUE(read_image_processor_settings(dir.path()).is_null());
  std::ofstream(dir.path("processor_config.json")) << R"({"image_processor": {"max_soft_tokens": 70}})";
  EXPECT_EQ(read_image_processor_settings(dir.path())["max_soft_tokens"], 70);
  std::ofstream(dir.path("preprocessor_config.json")) << R"({"max_soft_tokens": 560})";
  EXPECT_EQ(read_image_processor_settings(dir.path())["max_soft_tokens"], 560);
  std::ofstream(dir.path("preprocessor_config.json")) << "[1]";
  EXPECT_THROW(read_image_processor_settings(dir.path()), Error);
}

TEST(VisionEncoderImage, AGemma4HfDirectoryFindsItsOwnTower) {
  // og-synth's Gemma 4 HF directory has a stub vision_config and a stand-in
  // patch tensor but no embedder: it loads as a text model. With a tower's tensors and config added to it,
  // the tower is found and loaded (then the missing <|image> token is named).
  test::TempDir dir;
  const synth::SynthSpec g4 = synth::tiny_spec(synth::Family::kGemma4);
  const std::string hf = dir.path("hf");
  synth::write_hf(g4, hf);
  {
    ModelSetup s;
    s.model = hf;
    EXPECT_FALSE(load_model(s).vision);
  }
  Gemma4VisionConfig c = test::gemma4_tiny_config();
  c.text_hidden = g4.d_model;
  test::MemorySource tower;
  test::add_gemma4_tower(tower, c, 5);
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
      "head_dim": 8, "patch_size": 4, "pooling_kernel_size": 2, "position_embedding_size": 16,
      "rms_norm_eps": 0.05, "standardize": true, "use_clipped_linears": true})");
  std::ofstream(hf + "/config.json") << cfg.dump(2);
  EXPECT_NE(load_error(hf, "").find("the tokenizer has no <|image> token"), std::string::npos);
}

}  // namespace
}  // namespace og
