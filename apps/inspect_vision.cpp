// inspect's vision facts (inspect_vision.h).
#include "inspect_vision.h"

#include <cstdio>

#include "base/error.h"
#include "model/vision_encoder.h"
#include "model/vision_tower.h"
#include "tokenizer/tokenizer.h"

namespace og::app {

using Json = nlohmann::ordered_json;

bool is_mmproj(const GgufFile& g) {
  return g.get("clip.projector_type") != nullptr || g.get("clip.vision.projector_type") != nullptr ||
         g.get_string("general.architecture").value_or("") == "clip";
}

Json inspect_mmproj(const GgufFile& g, std::string* why) {
  Json v;
  // Gemma 4's converter names its projector under clip.vision only (mmproj_projector_type's order).
  v["projector_type"] =
      g.get_string("clip.vision.projector_type").value_or(g.get_string("clip.projector_type").value_or(""));
  // The sizes as the file states them (any projector type).
  const std::pair<const char*, const char*> keys[] = {
      {"image_size", "clip.vision.image_size"},
      {"patch_size", "clip.vision.patch_size"},
      {"layers", "clip.vision.block_count"},
      {"width", "clip.vision.embedding_length"},
      {"heads", "clip.vision.attention.head_count"},
      {"feed_forward", "clip.vision.feed_forward_length"},
      {"projection_width", "clip.vision.projection_dim"},
  };
  for (const auto& [name, key] : keys) {
    const std::optional<int64_t> n = g.get_int(key);
    v[name] = n ? Json(*n) : Json(nullptr);
  }
  v["tokens_per_image"] = nullptr;
  for (const auto& [name, key] : {std::pair{"image_mean", "clip.vision.image_mean"},
                                  std::pair{"image_std", "clip.vision.image_std"}}) {
    const std::optional<std::vector<double>> a = g.get_float_array(key);
    v[name] = a ? Json(*a) : Json(nullptr);
  }
  if (const std::optional<double> eps = g.get_float("clip.vision.attention.layer_norm_epsilon"))
    v["layer_norm_eps"] = *eps;
  *why = "";
  try {
    // The loader --mmproj uses: a projector type it does not take is refused by name.
    const std::unique_ptr<VisionEncoder> enc = load_vision_encoder(g);
    v["tokens_per_image"] = enc->max_tokens();
    // gemma4v keeps each image's aspect: its count is per image, up to this.
    v["variable_size"] = enc->projector() == "gemma4v";
  } catch (const Error& e) {
    *why = e.what();
  }
  v["loads"] = why->empty();
  return v;
}

void print_mmproj(const Json& v) {
  auto num = [](const Json& x) { return x.is_null() ? std::string("?") : x.dump(); };
  auto triple = [](const Json& x) {
    if (x.is_null()) return std::string("(not stated)");
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.7g, %.7g, %.7g", x[0].get<double>(), x[1].get<double>(), x[2].get<double>());
    return std::string(buf);
  };
  std::printf("vision tower:  llama.cpp mmproj, projector %s\n", v["projector_type"].get<std::string>().c_str());
  const bool variable = v.value("variable_size", false);
  const std::string size = variable ? std::string("of any size (aspect kept)")
                                    : num(v["image_size"]) + "x" + num(v["image_size"]) + " pixels";
  std::printf("  image %s, patch %s, %s layers, width %s, %s heads, feed-forward %s\n", size.c_str(),
              num(v["patch_size"]).c_str(), num(v["layers"]).c_str(), num(v["width"]).c_str(),
              num(v["heads"]).c_str(), num(v["feed_forward"]).c_str());
  std::printf("  %s%s tokens per image, projection width %s (the text model's hidden size)\n",
              variable ? "at most " : "", num(v["tokens_per_image"]).c_str(), num(v["projection_width"]).c_str());
  std::printf("  mean %s; std %s\n", triple(v["image_mean"]).c_str(), triple(v["image_std"]).c_str());
  if (v["loads"].get<bool>()) std::printf("  loads with --mmproj beside a text model of its family\n");
}

Json vision_facts(const VisionModel& v) {
  Json j;
  j["projector_type"] = v.projector;
  j["source"] = v.path;
  j["summary"] = v.describe();
  j["tokens_per_image"] = v.tokens_per_image;
  j["projection_width"] = v.width();
  j["image_size"] = {v.preprocess.width, v.preprocess.height};
  j["image_mean"] = {v.preprocess.mean[0], v.preprocess.mean[1], v.preprocess.mean[2]};
  j["image_std"] = {v.preprocess.std[0], v.preprocess.std[1], v.preprocess.std[2]};
  j["image_tokens"] = {{"begin", v.tokens.begin}, {"placeholder", v.tokens.placeholder}, {"end", v.tokens.end}};
  j["bidirectional"] = v.bidirectional;
  return j;
}

Json model_vision(const ModelSource& src, const Model& model, const std::string& mmproj) {
  if (mmproj.empty() && !(src.hf() && src.hf()->config.contains("vision_config"))) return nullptr;
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_source(src);
  const std::shared_ptr<const VisionModel> v = load_vision_model(mmproj, src, model, *tok);
  return v ? vision_facts(*v) : Json(nullptr);
}

}  // namespace og::app
