// `offgraph quantize IN.gguf OUT.gguf TYPE`: the same model with its matrices
// in another weight type (from F32 / F16 / BF16 sources), metadata kept, the
// off-graph cache geometry (offgraph.kv.*) added when missing.
#include <cstdio>

#include "commands.h"
#include "convert_common.h"
#include "shared_flags.h"
#include "base/flags.h"

namespace og::app {

int cmd_quantize(const Args& args) {
  ConvertFlags f;
  bool allow_requantize = false;
  Flags fl = command_flags("quantize", "IN.gguf OUT.gguf TYPE [options]\n"
                       "  TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q2_k q3_k iq4_nl iq4_xs mxfp4,\n"
                       "        or the mixes q4_k_m q5_k_m q3_k_m iq4_xs_m (llama.cpp's presets;\n"
                       "        docs/export-quantize.md has the tables); 1-D tensors are copied.\n"
                       "  Importance matrices (--imatrix) are not supported");
  fl.add_bool("allow-requantize", &allow_requantize,
              "convert matrices that are already quantized (adds a second quantization's error)");
  add_convert_flags(fl, f);
  std::vector<std::string> pos;
  if (!fl.parse(args, &pos)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  if (pos.size() != 3)
    usage_fail("expected IN.gguf OUT.gguf TYPE, got " + std::to_string(pos.size()) + " argument(s)");
  f.dtype = pos[2];
  ConvertOptions o = convert_options_of(f);
  o.allow_requantize = allow_requantize;
  return run_conversion([&] { return quantize_gguf(pos[0], pos[1], o); }, pos[1]);
}

}  // namespace og::app
