// `offgraph export --mmproj-out` of an HF Gemma4ForConditionalGeneration
// directory: its vision encoder and embedder as llama.cpp's gemma4v mmproj,
// written by add_gemma4_mmproj (mmproj_gguf_gemma4.h) the way export_hf_mmproj
// writes Gemma 3's (docs/vision.md "Gemma 4's tower").
#pragma once

#include <string>

#include "format/model_source.h"
#include "model/mmproj_gguf.h"
#include "model/vision_gemma4.h"

namespace og {

// config.json's model_type is gemma4 (an HF directory; false otherwise).
bool hf_is_gemma4(const ModelSource& src);

// The tower config of an HF Gemma 4 directory opened with its weights, its
// tensors bound as the loader binds them: og::Error naming the directory when
// it has no vision_config or no (or a misshapen) tower, before anything is written.
Gemma4VisionConfig hf_gemma4_mmproj_config(const ModelSource& src);

// The tower of `src` as a gemma4v mmproj at out_path: written under a
// temporary name, read back (config and every tensor bound as --mmproj binds
// them) and renamed when complete; an existing file is an og::Error unless
// `overwrite`. The mean and std are preprocessor_config.json's when it states
// them, else 0 and 1 (Gemma 4's processor only rescales). Returns the config.
Gemma4VisionConfig export_hf_gemma4_mmproj(const ModelSource& src, const std::string& out_path, MmprojWriteOptions o,
                                           bool overwrite);

}  // namespace og
