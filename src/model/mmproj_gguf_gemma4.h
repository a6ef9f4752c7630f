// Gemma 4's vision tower written as llama.cpp's mmproj GGUF (clip.vision.
// projector_type "gemma4v") from its HF tensors, the way llama.cpp's converter
// (Gemma4VisionAudioModel) renames and reshapes them, so that --mmproj (and
// llama-mtmd-cli) read it back: for `offgraph export --mmproj-out` and
// og-synth to call beside add_gemma3_mmproj (docs/vision.md "Gemma 4's tower").
#pragma once

#include <string>

#include "format/gguf.h"
#include "format/tensor_source.h"
#include "model/mmproj_gguf.h"
#include "model/vision_gemma4.h"

namespace og {

// The mmproj name of an HF Gemma4ForConditionalGeneration vision tensor (the
// checkpoint's prefix `top`, "model." or "", removed first); "" for a tensor
// that is not the vision tower's or its embedder's (text, audio).
std::string gemma4_mmproj_name(const std::string& hf_name, const std::string& top);

// Adds the clip.* keys of `c` and every vision tensor of `hf` (checked first
// by bind_gemma4_vision, so a missing or misshapen tensor is the loader's own
// og::Error): input_proj reshaped to the conv [hidden, 3, p, p] (f32, as the
// position table), ".linear" dropped from the clippable linears, their clamp
// scalars as one-value f32 tensors, matrices in o.matrices (f32, f16, bf16),
// norms and std_bias / std_scale f32. The pooling side is written only when
// it is not llama.cpp's default 3. o.image_mean / image_std are written as
// given (the Gemma 4 processor's are 0 and 1: it does not normalize).
void add_gemma4_mmproj(const Gemma4VisionConfig& c, const TensorSource& hf, const MmprojWriteOptions& o,
                       GgufWriter& w);

}  // namespace og
