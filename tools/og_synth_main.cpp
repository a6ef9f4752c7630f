// og-synth: writes a synthetic random-weight model (tests, benchmarks).
//   og-synth --family gemma3 --format gguf --out m.gguf [--preset tiny|llama32-1b|gemma4-e2b]
//            [--dtype q4_k] [--seed N] [--tokenizer stories|llama3|gemma4] [shape overrides]
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "model/quant_mix.h"
#include "synth/synth.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: og-synth --family F --format gguf|hf --out PATH [options]\n"
               "  --family F        llama | qwen2 | qwen3 | mistral | gemma3 | gemma4\n"
               "  --format X        gguf (one file) or hf (a directory: config.json, model.safetensors, tokenizer)\n"
               "  --out PATH        output file (gguf) or directory (hf)\n"
               "  --preset P        tiny (default: small test shapes) | llama32-1b (Llama-3.2-1B shapes)\n"
               "                    | gemma4-e2b (Gemma 4 E2B text shapes; --family gemma4 only)\n"
               "  --dtype T         GGUF weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k, or\n"
               "                    the mixes q4_k_m q5_k_m (per-tensor types as `offgraph quantize` picks them)\n"
               "                    (HF layout is always F32)\n"
               "  --seed N          weight seed (default 1)\n"
               "  --tokenizer T     stories (512 pieces) | llama3 (128256 tokens) | gemma4 (--vocab tokens)\n"
               "  --d-model N --layers N --heads N --kv-heads N --head-dim N --d-ff N --ctx N --window N\n"
               "                    override the preset's shapes\n"
               "  --head-dim-full N --shared-kv N --per-layer N --vocab N\n"
               "                    gemma4: full layers' head size, KV-sharing layers, per-layer input width,\n"
               "                    vocabulary size\n");
}

int64_t parse_int(const std::string& flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (errno || end == v || *end) og::fail("og-synth: ", flag, " expects an integer, got '", v, "'");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace og::synth;
  std::string family, format, out, preset = "tiny", dtype, tokenizer;
  std::vector<std::pair<std::string, std::string>> overrides;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "og-synth: unexpected argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--family") family = v;
    else if (a == "--format") format = v;
    else if (a == "--out") out = v;
    else if (a == "--preset") preset = v;
    else if (a == "--dtype") dtype = v;
    else if (a == "--tokenizer") tokenizer = v;
    else overrides.emplace_back(a, v);
  }
  try {
    Family f;
    if (family.empty() || !family_from_name(family, &f)) {
      std::fprintf(stderr, "og-synth: --family must be llama, qwen2, qwen3, mistral, gemma3 or gemma4\n");
      return 2;
    }
    if (format != "gguf" && format != "hf") {
      std::fprintf(stderr, "og-synth: --format must be gguf or hf\n");
      return 2;
    }
    if (out.empty()) {
      std::fprintf(stderr, "og-synth: --out PATH is required\n");
      return 2;
    }
    SynthSpec s;
    if (preset == "tiny") {
      s = tiny_spec(f);
    } else if (preset == "llama32-1b" && f != Family::kGemma4) {
      s = llama32_1b_spec();
      s.family = f;
    } else if (preset == "gemma4-e2b" && f == Family::kGemma4) {
      s = gemma4_e2b_spec();
    } else {
      std::fprintf(stderr, "og-synth: --preset must be tiny, llama32-1b (not gemma4) or gemma4-e2b (gemma4 only)\n");
      return 2;
    }
    if (!dtype.empty()) {
      og::WeightType wt;
      if (!og::weight_type_from_name(dtype, &wt)) {
        std::fprintf(stderr, "og-synth: unknown --dtype '%s'\n", dtype.c_str());
        return 2;
      }
      s.weight_dtype = wt.base;
      s.weight_mix = wt.mix;
    }
    if (!tokenizer.empty()) s.tokenizer = tokenizer;
    for (const auto& [flag, v] : overrides) {
      int64_t x = parse_int(flag, v.c_str());
      if (flag == "--seed") s.seed = static_cast<uint64_t>(x);
      else if (flag == "--d-model") s.d_model = x;
      else if (flag == "--layers") s.n_layers = x;
      else if (flag == "--heads") s.n_heads = x;
      else if (flag == "--kv-heads") s.n_kv_heads = x;
      else if (flag == "--head-dim") s.head_dim = x;
      else if (flag == "--d-ff") s.d_ff = x;
      else if (flag == "--ctx") s.n_ctx = x;
      else if (flag == "--window") s.window = x;
      else if (flag == "--head-dim-full") s.head_dim_full = x;
      else if (flag == "--shared-kv") s.n_shared_kv = x;
      else if (flag == "--per-layer") s.d_per_layer = x;
      else if (flag == "--vocab") s.vocab = x;
      else {
        std::fprintf(stderr, "og-synth: unknown option '%s' (see --help)\n", flag.c_str());
        return 2;
      }
    }
    if (format == "gguf") write_gguf(s, out);
    else write_hf(s, out);
    std::printf("og-synth: wrote %s %s model to %s\n", family_name(s.family), format.c_str(), out.c_str());
    return 0;
  } catch (const og::Error& e) {
    std::fprintf(stderr, "og-synth: error: %s\n", e.what());
    return 1;
  }
}
