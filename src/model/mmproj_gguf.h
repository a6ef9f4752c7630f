// Gemma 3's vision tower written as llama.cpp's mmproj GGUF (the file
// `llama-mtmd-cli --mmproj` and `offgraph --mmproj` read) from its HF tensors:
// `offgraph export --mmproj-out` and `og-synth --vision` write through here,
// and gemma3_mmproj_config / bind_gemma3_mmproj (vision_tower.h) read it back.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/model_source.h"
#include "format/tensor_source.h"
#include "model/vision_tower.h"
#include "tensor/dtype.h"

namespace og {

struct MmprojWriteOptions {
  // The encoder's and projector's matrices (q/k/v/out, fc1/fc2, the
  // projection); llama.cpp's converter writes them in its --outtype (f16 by
  // default). F32, F16 or BF16. The patch and position embeddings, norms and
  // biases are always f32, as the converter forces them.
  DType matrices = DType::F16;
  std::array<float, 3> image_mean{0.5f, 0.5f, 0.5f};  // clip.vision.image_mean (the processor's)
  std::array<float, 3> image_std{0.5f, 0.5f, 0.5f};
  std::string name;  // general.name ("" = none)
};

// The mmproj GGUF name of an HF vision tensor of Gemma3ForConditionalGeneration
// (with the checkpoint's prefix `top` removed first: "" or "model."); "" for a
// name that is not the tower's or the projector's.
// What every tower's writer shares (mmproj_gguf_gemma4.cpp too): the header
// keys of a clip file (architecture, name, projector type under `type_key`,
// the encoder's sizes, the norm's eps, the processor's mean and std), the
// check of the matrices' type, and a tensor's values as f32.
struct ClipHeader {
  const char* type_key = "clip.projector_type";  // Gemma 4's converter writes clip.vision.projector_type
  std::string projector_type;
  int64_t image_size = 0, patch_size = 0, hidden = 0, intermediate = 0, n_layers = 0, n_heads = 0;
  int64_t projection_dim = 0;  // the text model's hidden size
  float eps = 0;
};
void check_mmproj_matrices(const MmprojWriteOptions& o);
// The steps every `export --mmproj-out` shares: `hf_checkpoint_with_tower`
// checks that `src` is an HF directory opened with its weights whose
// config.json has a vision_config (og::Error naming the directory);
// `write_mmproj_file` writes `add`'s keys and tensors under a temporary name,
// hands the written file to `read_back` (which binds it as --mmproj does) and
// renames it onto out_path (an existing file is an og::Error unless `overwrite`).
const HfCheckpoint& hf_checkpoint_with_tower(const ModelSource& src);
void write_mmproj_file(const std::string& out_path, bool overwrite, const std::function<void(GgufWriter&)>& add,
                       const std::function<void(const GgufFile&)>& read_back);
void set_clip_header(GgufWriter& w, const ClipHeader& h, const MmprojWriteOptions& o);
void set_clip_u32(GgufWriter& w, const char* key, int64_t v);
std::vector<float> mmproj_values_of(const TensorSource& src, const TensorInfo& t);

std::string gemma3_mmproj_name(const std::string& hf_name, const std::string& top);

// Adds the clip.* keys of `c` and every tower tensor of `hf` (bound by
// bind_gemma3_vision's names, so a missing or misshapen tensor is the same
// og::Error) under llama.cpp's names: the soft norm as 1 + weight, the
// pooling side (clip.vision.projector.scale_factor) written only when it is
// not 4, as the converter does. Values are read when the writer writes.
void add_gemma3_mmproj(const VisionTowerConfig& c, const TensorSource& hf, const MmprojWriteOptions& o,
                       GgufWriter& w);

// The tower config of an HF Gemma3ForConditionalGeneration directory, for
// --mmproj-out: og::Error naming the directory when it has no vision tower
// (no vision_config) or one of another model_type.
VisionTowerConfig hf_mmproj_config(const ModelSource& src);

// `offgraph export --mmproj-out`: the tower of the HF Gemma3ForConditionalGeneration
// directory `src` (opened with its weights) as an mmproj at out_path,
// written under a temporary name, read back (config and every tensor bound
// as --mmproj binds them) and renamed when complete; an existing file is an
// og::Error unless `overwrite`. o.image_mean / image_std are replaced by
// preprocessor_config.json's when it states them. og::Error naming the
// directory when it has no vision tower or one of another kind. Returns the
// tower's config.
VisionTowerConfig export_hf_mmproj(const ModelSource& src, const std::string& out_path, MmprojWriteOptions o,
                                   bool overwrite);

}  // namespace og
