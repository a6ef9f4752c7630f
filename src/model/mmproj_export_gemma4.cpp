// Gemma 4's tower exported as a gemma4v mmproj (mmproj_export_gemma4.h).
#include "model/mmproj_export_gemma4.h"

#include <filesystem>
#include <memory>

#include "base/atomic_file.h"
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
  const HfCheckpoint* hf = src.hf();
  OG_CHECK(hf != nullptr, src.path(), ": --mmproj-out reads a Hugging Face checkpoint directory");
  OG_CHECK(hf->config.contains("vision_config"), src.path(),
           ": --mmproj-out: the model has no vision tower (config.json has no vision_config)");
  OG_CHECK(src.tensors() != nullptr, src.path(), ": --mmproj-out: the directory was opened without its weights");
  const Gemma4VisionConfig c = gemma4_vision_config(hf->config, hf->config_path);
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
  AtomicOutput out(out_path, overwrite);
  GgufWriter w;
  add_gemma4_mmproj(c, *src.tensors(), o, w);
  w.write(out.path());
  if (!out.in_place()) {
    // Read back as --mmproj reads it: the config and every tensor.
    const std::unique_ptr<GgufFile> f = GgufFile::open(out.path());
    const Gemma4VisionConfig g = gemma4_mmproj_config(*f);
    bind_gemma4_mmproj(g, *f);
  }
  out.commit();
  return c;
}

}  // namespace og
