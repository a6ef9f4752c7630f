// vision_llava_pixels.h: the LLaVA tower's preprocessing from either source.
#include "model/vision_llava_pixels.h"

#include <optional>

#include "base/error.h"
#include "format/hf_config.h"

namespace og {
namespace {

const std::array<float, 3> kClipMean{0.48145466f, 0.4578275f, 0.40821073f};
const std::array<float, 3> kClipStd{0.26862954f, 0.26130258f, 0.27577711f};
// llama.cpp's pad colour for LLaVA-style projectors: int(mean * 255) of CLIP's mean.
const std::array<uint8_t, 3> kLlamaCppPad{122, 116, 104};
constexpr int64_t kMaxSide = 16384;

std::optional<std::array<double, 3>> three_numbers(const nlohmann::json& j, const char* key,
                                                   const std::string& file) {
  if (!json_has(j, key)) return std::nullopt;
  const nlohmann::json& a = j[key];
  const bool ok = a.is_array() && a.size() == 3 && a[0].is_number() && a[1].is_number() && a[2].is_number();
  OG_CHECK(ok, file, ": ", key, " must be a list of 3 numbers, got ", json_excerpt(a));
  return std::array<double, 3>{a[0].get<double>(), a[1].get<double>(), a[2].get<double>()};
}

std::array<float, 3> to_float(const std::array<double, 3>& v) {
  return {static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

// transformers' get_size_dict: an integer is a square (crop_size) or a
// shortest edge (size); an object gives {height, width} or shortest_edge.
struct SizeDict {
  int64_t shortest_edge = 0, height = 0, width = 0;
};

SizeDict size_dict(const nlohmann::json& j, const char* key, bool int_is_square, const std::string& file) {
  const nlohmann::json& v = j[key];
  SizeDict s;
  if (v.is_number_integer()) {
    (int_is_square ? s.height : s.shortest_edge) = v.get<int64_t>();
    if (int_is_square) s.width = s.height;
  } else {
    OG_CHECK(v.is_object(), file, ": ", key, " must be an integer or an object, got ", json_excerpt(v));
    s.shortest_edge = json_int(v, "shortest_edge", file).value_or(0);
    s.height = json_int(v, "height", file).value_or(0);
    s.width = json_int(v, "width", file).value_or(0);
    OG_CHECK(s.shortest_edge > 0 || (s.height > 0 && s.width > 0), file, ": ", key,
             " needs shortest_edge or height and width (positive), got ", json_excerpt(v));
  }
  OG_CHECK(s.shortest_edge >= 0 && s.shortest_edge <= kMaxSide && s.height >= 0 && s.height <= kMaxSide &&
               s.width >= 0 && s.width <= kMaxSide,
           file, ": ", key, " ", json_excerpt(v), " is out of range (1..", kMaxSide, ")");
  return s;
}

// image_processor_type: true for LlavaImageProcessor (which reads do_pad).
bool llava_type(const nlohmann::json& p, const std::string& file) {
  const std::string type = json_string(p, "image_processor_type", file).value_or("CLIPImageProcessor");
  const bool clip = type == "CLIPImageProcessor" || type == "CLIPImageProcessorFast";
  const bool llava = type == "LlavaImageProcessor" || type == "LlavaImageProcessorFast";
  OG_CHECK(clip || llava, file, ": image_processor_type ", type,
           " is not supported for a LLaVA tower (CLIPImageProcessor, LlavaImageProcessor)");
  return llava;
}

void read_resize(const nlohmann::json& p, int64_t image_size, const std::string& file, VisionPixels& px) {
  OG_CHECK(json_bool(p, "do_resize", file).value_or(true), file,
           ": do_resize false is not supported (the tower takes ", image_size, "x", image_size, " pixels)");
  const bool crop = json_bool(p, "do_center_crop", file).value_or(true);
  if (json_has(p, "size")) {
    const SizeDict s = size_dict(p, "size", false, file);
    px.shortest_edge = s.shortest_edge;
    if (s.shortest_edge == 0)
      OG_CHECK(s.height == image_size && s.width == image_size, file, ": size ", s.height, "x", s.width,
               " is not the vision tower's image_size ", image_size);
  }
  OG_CHECK(crop || px.shortest_edge == 0, file,
           ": do_center_crop false with size.shortest_edge gives other than square images of ", image_size,
           " pixels, which the tower cannot take");
  if (crop && json_has(p, "crop_size")) {
    const SizeDict c = size_dict(p, "crop_size", true, file);
    OG_CHECK(c.height == image_size && c.width == image_size, file, ": crop_size ", c.height, "x", c.width,
             " is not the vision tower's image_size ", image_size);
  }
  if (const auto r = json_int(p, "resample", file)) {
    OG_CHECK(*r == 2 || *r == 3, file, ": resample ", *r, " is not supported (2 bilinear, 3 bicubic)");
    px.bicubic = *r == 3;
  }
}

// image_size square, bicubic, OpenAI CLIP's mean and std: what both sources start from.
VisionPixels clip_pixels(int64_t image_size) {
  VisionPixels px;
  px.width = px.height = image_size;
  px.bicubic = true;
  px.mean = kClipMean;
  px.std = kClipStd;
  return px;
}

}  // namespace

VisionPixels llava_hf_pixels(int64_t image_size, const nlohmann::json& processor, const std::string& file) {
  VisionPixels px = clip_pixels(image_size);
  px.shortest_edge = image_size;
  if (!processor.is_object()) return px;
  const nlohmann::json& p = processor;
  const bool llava = llava_type(p, file);
  read_resize(p, image_size, file, px);
  if (!json_bool(p, "do_rescale", file).value_or(true)) px.rescale = 1.0;
  else if (const auto f = json_number(p, "rescale_factor", file)) px.rescale = *f;
  const std::optional<std::array<double, 3>> mean = three_numbers(p, "image_mean", file);
  const std::optional<std::array<double, 3>> std = three_numbers(p, "image_std", file);
  if (mean) px.mean = to_float(*mean);
  if (std) px.std = to_float(*std);
  if (llava && json_bool(p, "do_pad", file).value_or(false)) {
    // LlavaImageProcessor: background tuple(int(x * 255) for x in self.image_mean), in float64.
    px.pad_square = true;
    for (size_t i = 0; i < 3; ++i) {
      const double m = mean ? (*mean)[i] : static_cast<double>(kClipMean[i]);
      OG_CHECK(m >= 0.0 && m * 255.0 < 256.0, file, ": image_mean ", m, " gives no 8-bit padding colour");
      px.pad_color[i] = static_cast<uint8_t>(m * 255.0);
    }
  }
  if (!json_bool(p, "do_normalize", file).value_or(true)) {
    px.mean = {0.0f, 0.0f, 0.0f};
    px.std = {1.0f, 1.0f, 1.0f};
  }
  for (float s : px.std) OG_CHECK(s != 0.0f, file, ": image_std holds 0");
  return px;
}

VisionPixels llava_mmproj_pixels(int64_t image_size, const GgufFile& f) {
  VisionPixels px = clip_pixels(image_size);
  px.letterbox = true;
  px.pad_color = kLlamaCppPad;
  for (const char* key : {"clip.vision.image_mean", "clip.vision.image_std"}) {
    const std::optional<std::vector<double>> v = f.get_float_array(key);
    if (!v) continue;
    OG_CHECK(v->size() == 3, f.source_name(), ": ", key, " has ", v->size(), " values, expected 3");
    std::array<float, 3>& out = std::string(key).ends_with("mean") ? px.mean : px.std;
    for (size_t i = 0; i < 3; ++i) out[i] = static_cast<float>((*v)[i]);
  }
  for (float s : px.std) OG_CHECK(s != 0.0f, f.source_name(), ": clip.vision.image_std holds 0");
  return px;
}

}  // namespace og
