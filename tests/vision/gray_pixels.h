// The preprocessing tests' pictures: gray pixels given as one value each
// (R = G = B), and the red channel read back, so that hand-computed
// expectations are one number per pixel.
#pragma once

#include <cstdint>
#include <vector>

#include "vision/image.h"

namespace og::vision::testing {

inline Image gray_image(const std::vector<uint8_t>& v, int w, int h) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = 3;
  for (uint8_t x : v) img.pixels.insert(img.pixels.end(), {x, x, x});
  return img;
}

inline std::vector<uint8_t> red(const Image& img) {
  std::vector<uint8_t> r;
  for (size_t i = 0; i < img.pixels.size(); i += 3) r.push_back(img.pixels[i]);
  return r;
}

}  // namespace og::vision::testing
