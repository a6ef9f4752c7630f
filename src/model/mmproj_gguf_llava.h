// The LLaVA-style tower (CLIP + the two-layer MLP projector of an HF
// LlavaForConditionalGeneration) written as llama.cpp's "mlp" mmproj GGUF,
// the names and keys og-synth --family llama --vision writes and
// llava_mmproj_config / bind_llava_mmproj read back: `offgraph export
// --mmproj-out` of a model_type llava directory (docs/vision.md "LLaVA's tower").
#pragma once

#include <string>

#include "format/gguf.h"
#include "format/model_source.h"
#include "format/tensor_source.h"
#include "model/mmproj_gguf.h"
#include "model/vision_llava.h"

namespace og {

// The mmproj name of an HF LLaVA vision tensor (the checkpoint's prefix `top`,
// "model." or "", removed first): the tower's as v.*, fc1 as ffn_up, the
// projector's linear_1 / linear_2 as mm.0 / mm.2; "" for any other tensor.
std::string llava_mmproj_name(const std::string& hf_name, const std::string& top);

// Adds the clip.* keys (projector type mlp, block_count the feature layer,
// clip.use_gelu for a GELU tower) and the tower's tensors cut at the feature
// layer, without the post-LayerNorm (transformers reads the hidden state
// before it), as llama.cpp's converters store LLaVA 1.5's tower. The tensors
// are checked first by bind_llava_vision (the loader's own og::Error). A
// tower the file cannot state is refused: vision_feature_select_strategy
// "full" (the class token kept) or feature layer 0. Matrices in o.matrices,
// the embeddings, norms and biases f32.
void add_llava_mmproj(const ClipTowerConfig& c, const TensorSource& hf, const MmprojWriteOptions& o, GgufWriter& w);

// config.json's model_type is llava (an HF directory; false otherwise).
bool hf_is_llava(const ModelSource& src);

// The tower config of an HF LLaVA directory opened with its weights, its
// tensors bound as the loader binds them and checked writable: og::Error
// naming the directory before anything is written.
ClipTowerConfig hf_llava_mmproj_config(const ModelSource& src);

// The tower of `src` as an mlp mmproj at out_path (write_mmproj_file: a
// temporary name, read back, renamed). Mean and std are the image
// processor's (preprocessor_config.json, as llava_hf_pixels reads it; CLIP's
// without one). Returns the config.
ClipTowerConfig export_hf_llava_mmproj(const ModelSource& src, const std::string& out_path, MmprojWriteOptions o,
                                       bool overwrite);

}  // namespace og
