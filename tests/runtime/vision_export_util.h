// What the export round-trip tests share (vision_export_gemma4_test.cpp,
// vision_export_llava_test.cpp): loading a model with or without --mmproj,
// an og::Error's message, a generated picture, an HF directory's text model
// exported as f32 GGUF.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/error.h"
#include "format/model_source.h"
#include "model/gguf_convert.h"
#include "runtime/run_setup.h"
#include "tokenizer/gguf_vocab_export.h"
#include "vision/image.h"

namespace og::test {

inline LoadedModel load_with_mmproj(const std::string& model, const std::string& mmproj = "") {
  ModelSetup s;
  s.model = model;
  s.mmproj = mmproj;
  return load_model(s);
}

inline std::string export_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A w x h RGB picture whose channels vary differently along x and y, shifted by seed.
inline vision::Image export_picture(int w, int h, int seed) {
  vision::Image im;
  im.width = w;
  im.height = h;
  im.channels = 3;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      im.pixels.push_back(static_cast<uint8_t>((x * 9 + seed * 31) & 255));
      im.pixels.push_back(static_cast<uint8_t>((y * 7 + seed) & 255));
      im.pixels.push_back(static_cast<uint8_t>((x * y + seed * 3) & 255));
    }
  return im;
}

// The directory's text model as an f32 GGUF with its tokenizer (what `export --dtype f32` writes).
inline void export_text_f32(const ModelSource& src, const std::string& out) {
  ConvertOptions o;
  if (!weight_type_from_name("f32", &o.type)) throw Error("f32 is not a weight type");
  o.metadata = tokenizer_gguf_keys(*src.hf());
  export_hf_to_gguf(src, out, o);
}

}  // namespace og::test
