// vision_encoder.h: each tower behind one interface, and the dispatch by
// projector type (mmproj) or model_type (HF config.json).
#include "model/vision_encoder.h"

#include <filesystem>
#include <sstream>

#include "base/error.h"
#include "format/hf_config.h"
#include "model/vision_gemma4.h"
#include "model/vision_llava.h"
#include "model/vision_llava_pixels.h"
#include "model/vision_tower.h"

namespace og {

namespace {

std::string describe_line(const std::string& type, const std::string& size, int64_t patch, int64_t layers,
                          int64_t width, int64_t heads, const std::string& tokens, int64_t projection) {
  std::ostringstream o;
  o << type << " vision tower: " << size << "patch " << patch << ", " << layers << " layers, width " << width << ", "
    << heads << " heads, " << tokens << " tokens per image, projection width " << projection;
  return o.str();
}

class Gemma3Encoder final : public VisionEncoder {
 public:
  Gemma3Encoder(VisionTowerConfig c, VisionTowerWeights w) : tower_(c, std::move(w)) {}
  const std::string& projector() const override { return type_; }
  int64_t width() const override { return tower_.config().text_hidden; }
  int64_t max_tokens() const override { return tower_.config().mm_tokens_per_image; }
  VisionPixels pixels_for(int64_t, int64_t) const override {
    VisionPixels p;  // Gemma3ImageProcessor: bilinear, mean = std = 0.5
    p.width = p.height = tower_.config().image_size;
    return p;
  }
  int64_t tokens_for(int64_t, int64_t) const override { return max_tokens(); }
  std::vector<float> encode(std::span<const float> pixels, int64_t width, int64_t height) const override {
    const int64_t s = tower_.config().image_size;
    OG_CHECK(width == s && height == s, "gemma3 vision: the input is ", width, "x", height, " pixels, the tower takes ",
             s, "x", s);
    return tower_.encode(pixels);
  }
  std::string describe() const override {
    const VisionTowerConfig& c = tower_.config();
    return describe_line(type_, std::to_string(c.image_size) + "x" + std::to_string(c.image_size) + " pixels, ",
                         c.patch_size, c.n_layers, c.hidden, c.n_heads, std::to_string(c.mm_tokens_per_image),
                         c.text_hidden);
  }

 private:
  std::string type_ = "gemma3";
  VisionTower tower_;
};

class Gemma4Encoder final : public VisionEncoder {
 public:
  Gemma4Encoder(Gemma4VisionConfig c, Gemma4VisionWeights w) : tower_(c, std::move(w)) {}
  const std::string& projector() const override { return type_; }
  int64_t width() const override { return tower_.config().text_hidden; }
  int64_t max_tokens() const override { return tower_.config().max_soft_tokens; }
  VisionPixels pixels_for(int64_t src_width, int64_t src_height) const override {
    // Gemma4ImageProcessor: the aspect kept within the patch budget, bicubic,
    // rescaled to [0, 1]; the model's 2 * (x - 0.5) is mean = std = 0.5 here.
    const std::pair<int64_t, int64_t> hw = gemma4_image_size(tower_.config(), src_height, src_width);
    VisionPixels p;
    p.height = hw.first;
    p.width = hw.second;
    p.bicubic = true;
    return p;
  }
  int64_t tokens_for(int64_t width, int64_t height) const override { return tower_.tokens_for(height, width); }
  std::vector<float> encode(std::span<const float> pixels, int64_t width, int64_t height) const override {
    return tower_.encode(pixels, height, width);
  }
  std::string describe() const override {
    const Gemma4VisionConfig& c = tower_.config();
    return describe_line(type_, "", c.patch_size, c.n_layers, c.hidden, c.n_heads,
                         "at most " + std::to_string(c.max_soft_tokens), c.text_hidden);
  }

 private:
  std::string type_ = "gemma4v";
  Gemma4VisionTower tower_;
};

class LlavaEncoder final : public VisionEncoder {
 public:
  LlavaEncoder(ClipTowerConfig c, ClipTowerWeights w, VisionPixels px) : px_(px), tower_(c, std::move(w)) {}
  const std::string& projector() const override { return type_; }
  int64_t width() const override { return tower_.text_hidden(); }
  int64_t max_tokens() const override { return tower_.config().n_tokens(); }
  // The source's rule (vision_llava_pixels.h): the HF image processor's, or llama.cpp's for an mmproj.
  VisionPixels pixels_for(int64_t, int64_t) const override { return px_; }
  int64_t tokens_for(int64_t, int64_t) const override { return max_tokens(); }
  std::vector<float> encode(std::span<const float> pixels, int64_t width, int64_t height) const override {
    const int64_t s = tower_.config().image_size;
    OG_CHECK(width == s && height == s, "clip vision: the input is ", width, "x", height, " pixels, the tower takes ",
             s, "x", s);
    return tower_.encode(pixels);
  }
  std::string describe() const override {
    const ClipTowerConfig& c = tower_.config();
    return describe_line(type_, std::to_string(c.image_size) + "x" + std::to_string(c.image_size) + " pixels, ",
                         c.patch_size, c.feature_layers, c.hidden, c.n_heads, std::to_string(c.n_tokens()),
                         tower_.text_hidden());
  }

 private:
  std::string type_ = "mlp";
  VisionPixels px_;
  LlavaVisionTower tower_;
};

// The image processor's settings sit beside config.json (for messages).
std::string processor_file(const std::string& config_file) {
  const std::filesystem::path dir = std::filesystem::path(config_file).parent_path();
  return (dir.empty() ? std::string() : dir.string() + "/") + "preprocessor_config.json";
}

}  // namespace

std::string mmproj_projector_type(const GgufFile& f) {
  if (auto t = f.get_string("clip.vision.projector_type")) return *t;
  const std::optional<std::string> t = f.get_string("clip.projector_type");
  OG_CHECK(t.has_value(), f.source_name(), ": clip.projector_type is missing (not an mmproj file?)");
  return *t;
}

std::unique_ptr<VisionEncoder> load_vision_encoder(const GgufFile& f) {
  const std::string type = mmproj_projector_type(f);
  if (type == "gemma3") {
    const VisionTowerConfig c = gemma3_mmproj_config(f);
    return std::make_unique<Gemma3Encoder>(c, bind_gemma3_mmproj(c, f));
  }
  if (type == "gemma4v") {
    const Gemma4VisionConfig c = gemma4_mmproj_config(f);
    return std::make_unique<Gemma4Encoder>(c, bind_gemma4_mmproj(c, f));
  }
  if (type == "mlp") {
    const ClipTowerConfig c = llava_mmproj_config(f);
    return std::make_unique<LlavaEncoder>(c, bind_llava_mmproj(c, f), llava_mmproj_pixels(c.image_size, f));
  }
  throw Error(f.source_name() + ": clip.projector_type is \"" + type +
              "\"; supported: gemma3, gemma4v, mlp (LLaVA)");
}

std::unique_ptr<VisionEncoder> load_vision_encoder(const nlohmann::json& config, const std::string& file,
                                                   const TensorSource& src, const nlohmann::json& processor) {
  const std::string type = json_string(config, "model_type", file).value_or("");
  if (type == "gemma3") {
    const VisionTowerConfig c = gemma3_vision_config(config, file);
    return std::make_unique<Gemma3Encoder>(c, bind_gemma3_vision(c, src));
  }
  if (type == "gemma4") {
    Gemma4VisionConfig c = gemma4_vision_config(config, file);
    if (processor.is_object() && processor.contains("max_soft_tokens")) {
      const nlohmann::json& m = processor["max_soft_tokens"];
      const bool ok = m.is_number_integer() && (m == 70 || m == 140 || m == 280 || m == 560 || m == 1120);
      OG_CHECK(ok, file, ": the image processor's max_soft_tokens is ", json_excerpt(m),
               "; Gemma 4's processor takes 70, 140, 280, 560 or 1120");
      c.max_soft_tokens = m.get<int64_t>();
    }
    return std::make_unique<Gemma4Encoder>(c, bind_gemma4_vision(c, src));
  }
  if (type == "llava") {
    const ClipTowerConfig c = llava_vision_config(config, file);
    return std::make_unique<LlavaEncoder>(c, bind_llava_vision(c, src), llava_hf_pixels(c.image_size, processor, processor_file(file)));
  }
  throw Error(file + ": model_type \"" + type + "\" has no vision tower offgraph can run (gemma3, gemma4, llava)");
}

}  // namespace og
