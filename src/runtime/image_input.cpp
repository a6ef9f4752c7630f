// Images into a session through a vision tower (image_input.h).
#include "runtime/image_input.h"

#include <string>

#include "base/error.h"

namespace og {

TowerImage encode_image(const VisionTower& tower, std::span<const float> pixels) {
  TowerImage im;
  im.rows = tower.encode(pixels);  // checks the pixel count first
  im.width = tower.config().text_hidden;
  Sha256 h;
  const std::string tag = "offgraph image v1 " + std::to_string(tower.config().image_size) + "\n";
  h.update(tag);
  h.update(pixels.data(), pixels.size() * sizeof(float));
  im.hash = h.finish();
  return im;
}

void append_tower_image(Session& s, const TowerImage& image, int64_t d_model, int32_t placeholder,
                        bool bidirectional) {
  OG_CHECK(image.width == d_model, "image: the vision tower's rows are ", image.width,
           " wide but the text model's hidden size is ", d_model, " (a tower of another model?)");
  s.append_image(image.rows, image.width, image.hash, placeholder, bidirectional);
}

}  // namespace og
