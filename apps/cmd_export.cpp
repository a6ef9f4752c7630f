// `offgraph export --model HF_DIR --out X.gguf [--dtype T] [--mmproj-out P.gguf]`:
// a Hugging Face checkpoint as one GGUF file that offgraph and llama.cpp both
// run, with the tokenizer and the off-graph cache geometry (offgraph.kv.*) in
// its metadata; a vision checkpoint's tower as llama.cpp's mmproj GGUF.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "convert_common.h"
#include "base/flags.h"
#include "format/model_source.h"
#include "model/mmproj_export_gemma4.h"
#include "model/mmproj_gguf.h"
#include "model/mmproj_gguf_llava.h"
#include "shared_flags.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og::app {

int cmd_export(const Args& args) {
  std::string model, out, mmproj_out;
  ConvertFlags f;
  f.dtype = "f16";
  Flags fl = command_flags("export", "--model HF_DIR --out X.gguf [--dtype T] [options]");
  add_model_flag(fl, &model, "Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer) (required)");
  fl.add_string("out", &out, "output .gguf file (written under a temporary name, renamed when complete) (required)",
                "PATH");
  fl.add_string("dtype", &f.dtype,
                "weight type of the matrices: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q2_k q3_k iq4_nl "
                "iq4_xs mxfp4, or the mixes q4_k_m q5_k_m q3_k_m iq4_xs_m (llama.cpp's presets; "
                "docs/export-quantize.md has the tables); 1-D tensors stay f32. "
                "Importance matrices (--imatrix) are not supported",
                "T");
  fl.add_string("mmproj-out", &mmproj_out,
                "also write the checkpoint's vision tower (Gemma 3's, Gemma 4's or LLaVA's) as llama.cpp's mmproj GGUF, for "
                "--mmproj; its matrices f16 (f32 or bf16 with that --dtype; patch and position embeddings, norms and biases f32, as "
                "llama.cpp's converter); with it, --out may be left out",
                "PATH");
  add_convert_flags(fl, f);
  if (!fl.parse(args)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_model_given(model);
  if (out.empty() && mmproj_out.empty()) usage_fail("--out is required (or --mmproj-out for the vision tower alone)");
  check_path_exists(model, "--model");  // a missing path: exit 1, as in every command
  std::error_code ec;
  if (!std::filesystem::is_directory(model, ec))
    fail(model, ": not a directory (--model; export reads Hugging Face checkpoint directories)");
  ConvertOptions o = convert_options_of(f);
  // The directory is read once: its tokenizer keys, weights and templates come
  // from one source (its weights opened by the export, after the tokenizer's checks).
  // With --mmproj-out the weights are opened with the directory: the text
  // export and the tower read the same safetensors.
  const std::shared_ptr<const ModelSource> src = ModelSource::open(model, /*weights=*/!mmproj_out.empty());
  const bool gemma4 = hf_is_gemma4(*src);  // its tower is Gemma 4's encoder (gemma4v), else Gemma 3's
  const bool llava = hf_is_llava(*src);    // or LLaVA's CLIP + MLP (mlp)
  if (!mmproj_out.empty()) {
    // A checkpoint without a tower of these kinds: refused before any writing.
    if (gemma4) hf_gemma4_mmproj_config(*src);
    else if (llava) hf_llava_mmproj_config(*src);
    else hf_mmproj_config(*src);
  }
  if (!out.empty()) {
    o.metadata = tokenizer_gguf_keys(*src->hf());
    const int rc = run_conversion([&] { return export_hf_to_gguf(*src, out, o); }, out);
    if (rc != 0 || mmproj_out.empty()) return rc;
  }
  MmprojWriteOptions mo;
  mo.matrices = o.type.base == DType::F32 || o.type.base == DType::BF16 ? o.type.base : DType::F16;
  if (gemma4) {
    const Gemma4VisionConfig g = export_hf_gemma4_mmproj(*src, mmproj_out, mo, f.force);
    diag("[summary] wrote %s: gemma4v vision tower (mmproj), %lld layers, patch %lld, width %lld, matrices %s\n",
         mmproj_out.c_str(), static_cast<long long>(g.n_layers), static_cast<long long>(g.patch_size),
         static_cast<long long>(g.hidden), dtype_name(static_cast<uint32_t>(mo.matrices)).c_str());
    return 0;
  }
  if (llava) {
    const ClipTowerConfig l = export_hf_llava_mmproj(*src, mmproj_out, mo, f.force);
    diag("[summary] wrote %s: mlp vision tower (mmproj), %lld layers, %lldx%lld pixels, %lld tokens per image, "
         "matrices %s\n",
         mmproj_out.c_str(), static_cast<long long>(l.feature_layers), static_cast<long long>(l.image_size),
         static_cast<long long>(l.image_size), static_cast<long long>(l.n_tokens()),
         dtype_name(static_cast<uint32_t>(mo.matrices)).c_str());
    return 0;
  }
  const VisionTowerConfig c = export_hf_mmproj(*src, mmproj_out, mo, f.force);
  diag("[summary] wrote %s: gemma3 vision tower (mmproj), %lld layers, %lldx%lld pixels, %lld tokens per image, "
       "matrices %s\n",
       mmproj_out.c_str(), static_cast<long long>(c.n_layers), static_cast<long long>(c.image_size),
       static_cast<long long>(c.image_size), static_cast<long long>(c.mm_tokens_per_image),
       dtype_name(static_cast<uint32_t>(mo.matrices)).c_str());
  return 0;
}

}  // namespace og::app
