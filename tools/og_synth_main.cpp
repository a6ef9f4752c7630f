// og-synth: writes a synthetic random-weight model (tests, benchmarks).
//   og-synth --family gemma3 --format gguf --out m.gguf [--preset tiny|llama32-1b|gemma4-e2b|qwen3-30b-a3b|gpt-oss-20b]
//            [--dtype q4_k] [--seed N] [--tokenizer stories|llama3|gemma4|harmony] [shape overrides]
//            [--chat-template FILE] [--script FILE] [--embedding [--pooling P]] [--longrope ORIG] [--partial-rotary F] (phi3) [--tied true|false]
//            [--row-pool N] (GGUF: large quantized matrices from N pool rows, for benchmark-sized files)
//            [--vision [--mmproj-out P.gguf]] (gemma3: a tiny SigLIP tower, gemma4: a tiny Gemma 4 encoder; GGUF: the tower in llama.cpp's mmproj file)
// Flags are parsed by the commands' flag library (base/flags.h): the same
// spellings, checks and messages; bad usage exits 2, a failed write 1.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/flags.h"
#include "base/mapped_file.h"
#include "model/quant_mix.h"
#include "synth/synth.h"

namespace {

using og::synth::Family;
using og::synth::SynthSpec;

struct SynthFlags {
  std::string family, format, out, preset = "tiny", dtype, tokenizer, chat_template, script, pooling, mmproj_out;
  std::string vision_shape = "tiny";
  bool embedding = false, vision = false;
  int64_t seed = 1;
  // Shape overrides; applied only when given (the preset's value otherwise).
  int64_t d_model = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, d_ff = 0, ctx = 0, window = 0;
  int64_t head_dim_full = 0, shared_kv = 0, per_layer = 0, vocab = 0, experts = 0, experts_used = 0, d_ff_expert = 0;
  int64_t longrope = 0, row_pool = 0;
  double partial_rotary = 1.0;
  std::string tied;
};

void add_flags(og::Flags& fl, SynthFlags& f) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  fl.add_choice("family", &f.family, {"llama", "qwen2", "qwen3", "mistral", "gemma3", "gemma4", "qwen3moe", "mixtral", "phi3", "gpt-oss", "bert", "nomic-bert"},
                "model family (required)");
  fl.add_choice("format", &f.format, {"gguf", "hf"},
                "gguf (one file) or hf (a directory: config.json, model.safetensors, tokenizer) (required)");
  fl.add_string("out", &f.out, "output file (gguf) or directory (hf) (required)", "PATH");
  fl.add_choice("preset", &f.preset, {"tiny", "llama32-1b", "gemma4-e2b", "qwen3-30b-a3b", "gpt-oss-20b"},
                "tiny: small test shapes; llama32-1b: Llama-3.2-1B shapes; gemma4-e2b: Gemma 4 E2B text shapes "
                "(--family gemma4 only); qwen3-30b-a3b: Qwen3-30B-A3B shapes (--family qwen3moe only); "
                "gpt-oss-20b: gpt-oss-20b shapes, MXFP4 experts with --dtype mxfp4 (--family gpt-oss only)");
  fl.add_string("dtype", &f.dtype,
                "GGUF weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q2_k q3_k iq4_nl iq4_xs "
                "mxfp4, or the mixes q4_k_m q5_k_m q3_k_m iq4_xs_m (per-tensor types as `offgraph quantize` picks "
                "them); HF layout is always F32 but gpt-oss's experts (bf16, or mxfp4 as released); empty = f32",
                "T");
  fl.add_int("seed", &f.seed, 0, std::numeric_limits<int64_t>::max(), "weight seed");
  fl.add_string("tokenizer", &f.tokenizer,
                "stories (512 pieces) | llama3 (128256 tokens) | gemma4 (--vocab tokens) | harmony (201088, gpt-oss's "
                "o200k_harmony ids); default: the preset's",
                "T");
  fl.add_string("chat-template", &f.chat_template,
                "store this Jinja chat template file's text with the model (GGUF tokenizer.chat_template; HF "
                "chat_template.jinja); default: the tokenizer's own",
                "FILE");
  fl.add_string("script", &f.script,
                "a JSON reply script (docs/tools.md): bigram chains of token texts the model follows under greedy "
                "decoding; implies --tokenizer llama3 and an untied output (families llama, qwen2, qwen3)",
                "FILE");
  fl.add_bool("embedding", &f.embedding,
              "an embedding model (tiny preset; qwen3: last-token pooling as Qwen3-Embedding; bert: cls, nomic-bert: mean (always embedding models); gemma3: "
              "bidirectional, mean pooling, dense 4d -> d as EmbeddingGemma); HF as a headless base model with "
              "sentence-transformers modules");
  fl.add_choice("pooling", &f.pooling, {"none", "mean", "cls", "last"},
                "override the embedding model's pooling (implies --embedding)");
  const std::string shape = "override the preset's ";
  fl.add_int("d-model", &f.d_model, 1, kMax, shape + "model width");
  fl.add_int("layers", &f.layers, 1, kMax, shape + "layer count");
  fl.add_int("heads", &f.heads, 1, kMax, shape + "attention heads");
  fl.add_int("kv-heads", &f.kv_heads, 1, kMax, shape + "KV heads");
  fl.add_int("head-dim", &f.head_dim, 1, kMax, shape + "head size");
  fl.add_int("d-ff", &f.d_ff, 1, kMax, shape + "feed-forward width");
  fl.add_int("ctx", &f.ctx, 1, kMax, shape + "context length");
  fl.add_int("window", &f.window, 0, kMax, shape + "sliding window; 0 = none");
  fl.add_int("head-dim-full", &f.head_dim_full, 0, kMax, "gemma4: full layers' head size");
  fl.add_int("shared-kv", &f.shared_kv, 0, kMax, "gemma4: KV-sharing layers");
  fl.add_int("per-layer", &f.per_layer, 0, kMax, "gemma4: per-layer input width");
  fl.add_int("vocab", &f.vocab, 0, kMax, "gemma4 tokenizer: vocabulary size");
  fl.add_int("experts", &f.experts, 1, 1024, "qwen3moe, mixtral: experts per layer");
  fl.add_int("experts-used", &f.experts_used, 1, 1024, "qwen3moe, mixtral: experts each token runs");
  fl.add_int("d-ff-expert", &f.d_ff_expert, 1, kMax, "qwen3moe: each expert's feed-forward width");
  fl.add_int("longrope", &f.longrope, 2, kMax,
             "phi3: Phi-3.5's longrope RoPE scaling with this original context (below --ctx), short and long factors");
  fl.add_float("partial-rotary", &f.partial_rotary, 0, 1,
               "phi3: the fraction of each head RoPE turns (Phi-4-mini: 0.75); default the preset's", true);
  fl.add_int("row-pool", &f.row_pool, 1, kMax,
             "GGUF: build every quantized expert stack and large matrix (not the embedding, routers, norms, biases) "
             "from N encoded random rows per (dtype, row length), row r of a tensor a copy of pool row "
             "hash(name, r) % N: benchmark-sized files in minutes (docs/tools.md); default off");
  fl.add_choice("tied", &f.tied, {"true", "false"}, "override the preset's tied output (output = token embedding)");
  fl.add_bool("vision", &f.vision,
              "gemma3, tiny preset: add a tiny random SigLIP tower and Gemma 3's projector (56x56 pixels, patch 14, "
              "2 layers, width 32, 4 tokens per image), Gemma 3's turn and image tokens in the stories vocabulary and "
              "a Gemma-3-style chat template; --format hf writes a Gemma3ForConditionalGeneration directory with the "
              "tower, --format gguf the text model (the tower goes to --mmproj-out). gemma4, tiny preset: a tiny random "
              "Gemma 4 vision encoder (patch 4, pooling 3, 2 layers, width 32, 280 tokens per image), Gemma 4's image "
              "tokens and a template writing <|image|>; --format hf a Gemma4ForConditionalGeneration directory with "
              "the tower, --format gguf the text model (the tower goes to --mmproj-out as a gemma4v mmproj). "
              "llama, tiny preset: a tiny CLIP tower (28x28 pixels, patch 7, 3 layers read at -2, 16 tokens per image) "
              "and LLaVA's MLP projector, <image> in the stories vocabulary and a LLaVA-1.5-style template; --format "
              "hf writes a LlavaForConditionalGeneration directory (CLIPImageProcessor settings), --format gguf the "
              "text model (the tower goes to --mmproj-out as an mlp mmproj)");
  fl.add_choice("vision-shape", &f.vision_shape, {"tiny", "gemma3-4b"},
                "gemma3 --vision: the tower's shape; tiny (default, above) or gemma3-4b (Gemma 3 4B's SigLIP: "
                "896x896, patch 14, 27 layers, width 1152, MLP 4304, 16 heads, 256 tokens per image; random weights "
                "for timing; with --d-model 2560 it projects to 4B's width). With --dtype q8_0 the mmproj's matrices "
                "are q8_0 where llama.cpp's converter makes them so (rows of whole 32-value blocks, not the input "
                "projection), f16 otherwise");
  fl.add_string("mmproj-out", &f.mmproj_out,
                "with --vision: also write the tower as llama.cpp's mmproj GGUF (clip.* keys, v.* / mm.* tensors; "
                "f32, or f16/bf16 with that --dtype)",
                "PATH");
}

SynthSpec spec_of(const og::Flags& fl, const SynthFlags& f) {
  if (f.family.empty()) og::usage_fail("--family is required");
  if (f.format.empty()) og::usage_fail("--format is required");
  if (f.out.empty()) og::usage_fail("--out is required");
  Family fam = Family::kLlama;
  og::synth::family_from_name(f.family, &fam);
  SynthSpec s;
  if (f.preset == "tiny") {
    s = og::synth::tiny_spec(fam);
  } else if (f.preset == "qwen3-30b-a3b" && fam == Family::kQwen3Moe) {
    s = og::synth::qwen3_30b_a3b_spec();
  } else if (f.preset == "llama32-1b" && fam != Family::kGemma4 && fam != Family::kQwen3Moe &&
             fam != Family::kMixtral && fam != Family::kGptOss) {
    s = og::synth::llama32_1b_spec();
    s.family = fam;
  } else if (f.preset == "gpt-oss-20b" && fam == Family::kGptOss) {
    s = og::synth::gpt_oss_20b_spec();
  } else if (f.preset == "gemma4-e2b" && fam == Family::kGemma4) {
    s = og::synth::gemma4_e2b_spec();
  } else {
    og::usage_fail("--preset " + f.preset + " does not fit --family " + f.family +
                   " (llama32-1b: dense families but gemma4; gemma4-e2b: gemma4 only; qwen3-30b-a3b: qwen3moe only; gpt-oss-20b: gpt-oss only)");
  }
  if (f.embedding || !f.pooling.empty()) {
    if (f.preset != "tiny") og::usage_fail("--embedding works with --preset tiny only");
    if (fam != Family::kQwen3 && fam != Family::kGemma3 && fam != Family::kBert && fam != Family::kNomicBert)
      og::usage_fail("--embedding needs --family qwen3, gemma3, bert or nomic-bert, not " + f.family);
    s = og::synth::tiny_embedding_spec(fam);
    if (!f.pooling.empty()) s.pooling = f.pooling;
  }
  if (!f.dtype.empty()) {
    og::WeightType wt;
    if (!og::weight_type_from_name(f.dtype, &wt)) og::usage_fail("unknown --dtype '" + f.dtype + "'");
    s.weight_dtype = wt.base;
    s.weight_mix = wt.mix;
  }
  if (!f.tokenizer.empty()) {
    if (f.tokenizer != "stories" && f.tokenizer != "llama3" && f.tokenizer != "gemma4" && f.tokenizer != "harmony")
      og::usage_fail("--tokenizer must be one of stories|llama3|gemma4|harmony, got '" + f.tokenizer + "'");
    s.tokenizer = f.tokenizer;
  }
  s.seed = static_cast<uint64_t>(f.seed);
  auto take = [&](const char* name, int64_t v, int64_t& field) {
    if (fl.given(name)) field = v;
  };
  take("d-model", f.d_model, s.d_model);
  take("layers", f.layers, s.n_layers);
  take("heads", f.heads, s.n_heads);
  take("kv-heads", f.kv_heads, s.n_kv_heads);
  take("head-dim", f.head_dim, s.head_dim);
  take("d-ff", f.d_ff, s.d_ff);
  take("ctx", f.ctx, s.n_ctx);
  take("window", f.window, s.window);
  take("head-dim-full", f.head_dim_full, s.head_dim_full);
  take("shared-kv", f.shared_kv, s.n_shared_kv);
  take("per-layer", f.per_layer, s.d_per_layer);
  take("vocab", f.vocab, s.vocab);
  // EmbeddingGemma's dense projections follow the width: d -> 4d -> d.
  if (!s.dense.empty()) s.dense = {4 * s.d_model, s.d_model};
  take("experts", f.experts, s.n_experts);
  take("experts-used", f.experts_used, s.n_experts_used);
  take("d-ff-expert", f.d_ff_expert, s.d_ff_expert);
  take("longrope", f.longrope, s.longrope_original);
  if (fl.given("partial-rotary")) s.partial_rotary = f.partial_rotary;
  if (!f.tied.empty()) s.tied = f.tied == "true";
  if (fl.given("row-pool")) {
    if (f.format != "gguf") og::usage_fail("--row-pool writes GGUF only (--format gguf)");
    if (!f.script.empty()) og::usage_fail("--row-pool cannot write a --script model (its rows are chosen)");
    s.row_pool = f.row_pool;
  }
  if (f.vision) {
    if (fam != Family::kGemma3 && fam != Family::kGemma4 && fam != Family::kLlama)
      og::usage_fail("--vision needs --family gemma3, gemma4 or llama, not " + f.family);
    if (f.preset != "tiny") og::usage_fail("--vision works with --preset tiny only");
    const char* own = fam == Family::kGemma4 ? "gemma4" : "stories";
    if (!f.tokenizer.empty() && f.tokenizer != own)
      og::usage_fail(std::string("--vision needs --tokenizer ") + own + " for " + f.family);
    s.vision = true;
    if (f.vision_shape == "gemma3-4b") {
      if (fam != Family::kGemma3) og::usage_fail("--vision-shape gemma3-4b needs --family gemma3");
      s.vision_image_size = 896;
      s.vision_hidden = 1152;
      s.vision_d_ff = 4304;
      s.vision_layers = 27;
      s.vision_heads = 16;
      s.vision_tokens = 256;
    }
  }
  if (f.vision_shape != "tiny" && !f.vision) og::usage_fail("--vision-shape needs --vision");
  if (!f.mmproj_out.empty() && !f.vision) og::usage_fail("--mmproj-out needs --vision");
  // Files are read after every usage check: a missing one is a failed write (exit 1).
  if (!f.chat_template.empty()) s.chat_template = og::read_text_file(f.chat_template);
  if (!f.script.empty()) {
    if (f.tokenizer.empty()) s.tokenizer = "llama3";
    s.tied = false;
    s.script = og::synth::read_script(f.script);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  SynthFlags f;
  og::Flags fl("", "--family F --format gguf|hf --out PATH [options]", "og-synth");
  add_flags(fl, f);
  try {
    if (!fl.parse(og::Args(argv, argv + argc))) {
      std::fputs(fl.help().c_str(), stdout);
      return 0;
    }
    const SynthSpec s = spec_of(fl, f);
    if (f.format == "gguf") og::synth::write_gguf(s, f.out);
    else og::synth::write_hf(s, f.out);
    std::printf("og-synth: wrote %s %s model to %s\n", og::synth::family_name(s.family), f.format.c_str(),
                f.out.c_str());
    if (!f.mmproj_out.empty()) {
      og::synth::write_mmproj(s, f.mmproj_out);
      std::printf("og-synth: wrote its vision tower (mmproj) to %s\n", f.mmproj_out.c_str());
    }
    return 0;
  } catch (const og::UsageError& e) {
    std::fprintf(stderr, "og-synth: error: %s (see og-synth --help)\n", e.what());
    return 2;
  } catch (const og::Error& e) {
    std::fprintf(stderr, "og-synth: error: %s\n", e.what());
    return 1;
  }
}
