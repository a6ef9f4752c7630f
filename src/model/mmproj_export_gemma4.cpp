// Gemma 4's tower exported as a gemma4v mmproj (mmproj_export_gemma4.h).
#include "model/mmproj_export_gemma4.h"

#include <filesystem>

#include "base/error.h"
#include "format/hf_config.h"
#include "format/hf_image_processor.h"
#include "model/mmproj_gguf_gemma4.h"

namespace og {

bool hf_is_gemma4(const ModelSource& src) {
  const HfCheckpoint* hf = src.hf();
  return hf != nullptr && json_string(hf->config, "model_type", hf->config_path).value_or("") == "gemma4";
}

Gemma4VisionConfig hf_gemma4_mmproj_config(const ModelSource& src) {
  const HfCheckpoint& hf = hf_checkpoint_with_tower(src);
  const Gemma4VisionConfig c = gemma4_vision_config(hf.config, hf.config_path);
  c.check();
  // A stripped or partial tower is named here, before the text export writes anything.
  bind_gemma4_vision(c, *src.tensors());
  return c;
}

Gemma4VisionConfig export_hf_gemma4_mmproj(const ModelSource& src, const std::string& out_path, MmprojWriteOptions o,
                                           bool overwrite) {
  const Gemma4VisionConfig c = hf_gemma4_mmproj_config(src);
  o.image_mean = {0.0f, 0.0f, 0.0f};
  o.image_std = {1.0f, 1.0f, 1.0f};
  if (const std::optional<HfImageProcessor> p = read_hf_image_processor(src.hf()->dir)) {
    if (p->mean) o.image_mean = *p->mean;
    if (p->std) o.image_std = *p->std;
  }
  if (o.name.empty()) o.name = std::filesystem::path(src.path()).filename().string();
  write_mmproj_file(
      out_path, overwrite, [&](GgufWriter& w) { add_gemma4_mmproj(c, *src.tensors(), o, w); },
      [](const GgufFile& f) { bind_gemma4_mmproj(gemma4_mmproj_config(f), f); });
  return c;
}

}  // namespace og
