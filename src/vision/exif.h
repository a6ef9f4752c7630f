// EXIF orientation: the Orientation tag (0x0112) of IFD0 in a JPEG's APP1
// "Exif" segment, and the transform that shows the image upright (as
// PIL.ImageOps.exif_transpose does, which Hugging Face's load_image applies).
#pragma once

#include <cstddef>
#include <cstdint>

#include "vision/image.h"

namespace og::vision {

// The orientation (1..8) in an APP1 payload ("Exif\0\0" + TIFF header + IFDs);
// 1 (upright) when absent, malformed or out of range. Never throws: a bad EXIF
// block must not make a good image undecodable.
int exif_orientation(const uint8_t* app1, size_t size);

// The image as orientation `o` says to show it: 2 mirror, 3 rotate 180,
// 4 flip vertically, 5 transpose, 6 rotate 90 clockwise, 7 transverse,
// 8 rotate 90 counter-clockwise; 1 and anything else leave it as is.
Image apply_orientation(const Image& in, int o);

}  // namespace og::vision
