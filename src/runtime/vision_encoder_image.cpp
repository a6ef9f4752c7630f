// vision_encoder_image.h: any tower's image into rows and a hash.
#include "runtime/vision_encoder_image.h"

#include <filesystem>
#include <string>

#include "base/error.h"
#include "format/hf_config.h"
#include "runtime/vision_model.h"

namespace og {

vision::PreprocessConfig preprocess_config(const VisionPixels& px) {
  vision::PreprocessConfig c;
  c.width = static_cast<int>(px.width);
  c.height = static_cast<int>(px.height);
  c.resample = px.bicubic ? vision::Resample::bicubic : vision::Resample::bilinear;
  c.mean = px.mean;
  c.std = px.std;
  c.rescale = px.rescale;
  c.pad_square = px.pad_square;
  c.shortest_edge = static_cast<int>(px.shortest_edge);
  c.letterbox = px.letterbox;
  c.pad_color = px.pad_color;
  return c;
}

TowerImage encode_pixels(const VisionEncoder& enc, std::span<const float> pixels, int64_t width, int64_t height) {
  TowerImage im;
  im.rows = enc.encode(pixels, width, height);  // checks the size and the pixel count first
  im.width = enc.width();
  Sha256 h;
  const std::string tag =
      "offgraph image v1 " + enc.projector() + " " + std::to_string(width) + "x" + std::to_string(height) + "\n";
  h.update(tag);
  h.update(pixels.data(), pixels.size() * sizeof(float));
  im.hash = h.finish();
  return im;
}

TowerImage encode_image(const VisionEncoder& enc, const vision::Image& image) {
  const VisionPixels px = enc.pixels_for(image.width, image.height);
  OG_CHECK(px.width > 0 && px.height > 0 && px.width <= 16384 && px.height <= 16384, "image: the ",
           enc.projector(), " tower asks for ", px.width, "x", px.height, " pixels");
  const std::vector<float> pixels = vision::preprocess_image(image, preprocess_config(px));
  return encode_pixels(enc, pixels, px.width, px.height);
}

nlohmann::json read_image_processor_settings(const std::string& dir) {
  std::error_code ec;
  const std::string pre = dir + "/preprocessor_config.json";
  if (std::filesystem::exists(pre, ec)) return read_json_file(pre);
  const std::string proc = dir + "/processor_config.json";
  if (!std::filesystem::exists(proc, ec)) return nullptr;
  const nlohmann::json j = read_json_file(proc);
  if (j.contains("image_processor") && j["image_processor"].is_object()) return j["image_processor"];
  return nullptr;
}

void use_encoder(VisionModel& v, std::shared_ptr<const VisionEncoder> enc) {
  OG_CHECK(enc != nullptr, "vision: no tower");
  v.projection_width = enc->width();
  v.summary = enc->describe();
  v.tokens_per_image = enc->max_tokens();
  v.preprocess = preprocess_config(enc->pixels_for(1, 1));
  v.encoder = [enc](const vision::Image& im) { return encode_image(*enc, im); };
}

}  // namespace og
