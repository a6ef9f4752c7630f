// `offgraph export --model HF_DIR --out X.gguf [--dtype T]`: a Hugging Face
// checkpoint as one GGUF file that offgraph and llama.cpp both run, with the
// tokenizer and the off-graph cache geometry (offgraph.kv.*) in its metadata.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "convert_common.h"
#include "base/flags.h"
#include "format/model_source.h"
#include "shared_flags.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og::app {

int cmd_export(const Args& args) {
  std::string model, out;
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
  add_convert_flags(fl, f);
  if (!fl.parse(args)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_model_given(model);
  if (out.empty()) usage_fail("--out is required");
  check_path_exists(model, "--model");  // a missing path: exit 1, as in every command
  std::error_code ec;
  if (!std::filesystem::is_directory(model, ec))
    fail(model, ": not a directory (--model; export reads Hugging Face checkpoint directories)");
  ConvertOptions o = convert_options_of(f);
  // The directory is read once: its tokenizer keys, weights and templates come
  // from one source (its weights opened by the export, after the tokenizer's checks).
  const std::shared_ptr<const ModelSource> src = ModelSource::open(model, /*weights=*/false);
  o.metadata = tokenizer_gguf_keys(*src->hf());
  return run_conversion([&] { return export_hf_to_gguf(*src, out, o); }, out);
}

}  // namespace og::app
