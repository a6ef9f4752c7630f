// gpt-oss HF checkpoints: GptOssExperts' fused expert tensors presented as
// the [n_experts, rows, cols] stacks the rest of the loader reads (the GGUF
// shape), under the names weights.h hf_expert_stack_name gives. The
// checkpoint stores them in one of two forms:
// - float (bf16 as transformers saves, f16, f32): gate_up_proj [E, d_model,
//   2 ff] (input-major; gate at even, up at odd columns) and down_proj [E, ff,
//   d_model]; the stacks are their transposes, de-interleaved;
// - MXFP4 as released: gate_up_proj_blocks [E, 2 ff, d_model / 32, 16] and
//   gate_up_proj_scales [E, 2 ff, d_model / 32] (output-major, gate at even
//   and up at odd rows; per 32 inputs one E8M0 scale and 16 bytes whose byte
//   i holds element 2i in its low and 2i + 1 in its high nibble), down_proj_*
//   likewise [E, d_model, ff / 32, ...]; the stacks are ggml MXFP4 blocks
//   (scale, then byte i holding elements i and i + 16), the same values.
// gate_up_proj_bias [E, 2 ff] is split the same way; down_proj_bias [E,
// d_model] is the down stack's bias as stored. The stacks are copies in
// memory (neither form is a view of the GGUF layout); the consumed MXFP4
// tensors' file pages are dropped as each layer is converted.
#pragma once

#include <memory>

#include "format/tensor_source.h"
#include "model/config.h"

namespace og {

// src plus every layer's stacks (c.hf_moe.gpt_oss_stacks, layout kHf);
// og::Error naming the tensor when one is missing, mis-shaped or of a type
// that form cannot hold.
std::shared_ptr<const TensorSource> with_gpt_oss_expert_stacks(std::shared_ptr<const TensorSource> src,
                                                               const ModelConfig& c);

}  // namespace og
