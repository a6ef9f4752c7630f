// preprocessor_config.json (hf_image_processor.h).
#include "format/hf_image_processor.h"

#include <filesystem>

#include "base/error.h"
#include "format/hf_config.h"

namespace og {

std::optional<HfImageProcessor> read_hf_image_processor(const std::string& dir) {
  HfImageProcessor p;
  p.path = dir + "/preprocessor_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(p.path, ec)) return std::nullopt;
  const nlohmann::json j = read_json_file(p.path);
  for (const char* key : {"image_mean", "image_std"}) {
    if (!json_has(j, key)) continue;
    const nlohmann::json& a = j[key];
    OG_CHECK(a.is_array() && a.size() == 3, p.path, ": ", key, " must be a list of 3 numbers, got ", json_excerpt(a));
    std::array<float, 3> v{};
    for (size_t i = 0; i < 3; ++i) {
      OG_CHECK(a[i].is_number(), p.path, ": ", key, " must be a list of 3 numbers, got ", json_excerpt(a));
      v[i] = a[i].get<float>();
    }
    (std::string(key) == "image_mean" ? p.mean : p.std) = v;
  }
  p.rescale = json_number(j, "rescale_factor", p.path);
  p.resample = json_int(j, "resample", p.path);
  if (json_has(j, "size")) {
    OG_CHECK(j["size"].is_object(), p.path, ": size must be an object, got ", json_excerpt(j["size"]));
    p.height = json_int(j["size"], "height", p.path);
    p.width = json_int(j["size"], "width", p.path);
  }
  return p;
}

}  // namespace og
