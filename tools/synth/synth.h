// The synthetic model writer: tiny deterministic random-weight models of each
// family (tests make their fixtures with it at test time) and large ones with
// real shapes (benchmarks), in GGUF and in HF layout (config.json,
// model.safetensors, tokenizer.json). Both layouts of one spec hold the same
// weights, converted the way the real converters do (llama q/k row permutation,
// gemma's folded 1 + w norms).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace og::synth {

enum class Family { kLlama, kQwen2, kQwen3, kMistral, kGemma3, kGemma4, kQwen3Moe, kMixtral, kPhi3, kGptOss, kBert, kNomicBert };
const char* family_name(Family f);  // "llama", "qwen2", ...
bool family_from_name(const std::string& s, Family* out);

// A scripted reply machine (og-synth --script; docs/tools.md): under greedy
// decoding (and under sampling at ordinary temperatures) the model follows
// fixed bigrams, so a prompt ending in a chain's first token is answered with
// the rest of that chain. The residual stream carries only the token
// embedding (every attention output and MLP down projection is zero), each
// token with a successor gets an embedding dimension of its own (one-hot),
// and the untied output matrix maps that dimension to its successor alone
// (logit ~100, every other logit 0). Needs the llama3 tokenizer and a family
// without embedding scaling (llama, qwen2, qwen3).
struct SynthScript {
  struct Token {
    std::string text;
    bool special = false;  // a control token (chat markers); else user-defined (matched before BPE, printed)
  };
  std::string source = "script";  // names the script in error messages
  // Texts that become single tokens, in place of the vocabulary's
  // <|reserved_special_token_N|> entries (a text that already is one token keeps its id).
  std::vector<Token> tokens;
  // Each chain a list of token texts; consecutive pairs are bigrams. A token
  // has at most one successor across all chains.
  std::vector<std::vector<std::string>> chains;
  bool empty() const { return tokens.empty() && chains.empty(); }
};

// {"tokens": [{"text": T, "special": B} | T, ...], "chains": [[T, T, ...], ...], "description": "..."}:
// throws og::Error naming `name` on a malformed script.
SynthScript parse_script(const std::string& json_text, const std::string& name);
SynthScript read_script(const std::string& path);

struct SynthSpec {
  Family family = Family::kLlama;
  int64_t d_model = 64;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;
  int64_t head_dim = 16;
  int64_t d_ff = 128;
  int64_t n_ctx = 2048;           // context_length / max_position_embeddings
  int64_t window = 0;             // sliding window (mistral: every layer; gemma3/4: local layers); 0 = none
  int sliding_pattern = 6;        // gemma3/4: every P-th layer is global
  double rope_base = 10000.0;
  double rope_base_local = 10000.0;  // gemma3/4 local layers
  // gemma4 only.
  int64_t head_dim_full = 0;      // head size of full (global) layers; head_dim is the sliding layers'
  int64_t n_shared_kv = 0;        // the last N layers read the cache of the last owner layer of their type
  int64_t d_per_layer = 0;        // per-layer input width P (0 = none)
  bool double_wide_mlp = false;   // sharing layers have 2 * d_ff
  double partial_rotary = 1.0;    // fraction of each full-layer head that RoPE turns (gemma4; phi3: every layer)
  double final_softcap = 0;       // final logit soft-cap (0 = none)
  bool layer_scale = false;       // per-layer output scale tensors
  bool sharer_kv_tensors = false; // also write the (unused) K/V tensors of sharing layers
  int64_t vocab = 0;              // gemma4 tokenizer: vocabulary size (padded with unused pieces)
  // Mixture of experts (qwen3moe, mixtral; both need n_experts > 0): every
  // layer's MLP becomes n_experts SwiGLU experts of width d_ff_expert
  // (mixtral: d_ff) of which a row runs n_experts_used. qwen3moe writes
  // norm_topk_prob = expert_weights_norm.
  int64_t n_experts = 0;
  int64_t n_experts_used = 0;
  int64_t d_ff_expert = 0;
  bool expert_weights_norm = true;
  // phi3 only (fused qkv_proj and gate_up_proj): > 0 writes Phi-3.5's
  // longrope scaling, original_max_position_embeddings = longrope_original
  // (< n_ctx) and deterministic short/long factors [head_dim / 2].
  int64_t longrope_original = 0;
  // gpt-oss only (GGUF only; synth_gpt_oss.cpp): YaRN RoPE scaling factor
  // and original context, and the dtype of the matrices other than the
  // expert stacks when weight_dtype is MXFP4 (the experts' type).
  double yarn_factor = 8;
  int64_t yarn_original = 256;
  DType gpt_oss_dense_dtype = DType::F32;
  double rms_eps = 1e-5;
  bool tied = true;               // output = token embedding
  DType weight_dtype = DType::F32;   // GGUF 2-D weights (norms stay F32); HF layout is always F32
  // GGUF: pick each matrix's dtype by the _m mix rules of model/quant_mix.h
  // with weight_dtype as the base (Q4_K -> q4_k_m, Q5_K -> q5_k_m), as
  // `offgraph quantize ... q4_k_m` does.
  bool weight_mix = false;
  // GGUF only, > 0: every quantized expert stack and every other quantized
  // matrix of >= 2^22 values (but the token embedding) is built from row_pool
  // rows per (dtype, row length), each a real encoding of generated values;
  // row r of tensor T is pool row hash(T, r) % row_pool. Writes benchmark-sized
  // files in minutes: kernel speed does not depend on the values, and the
  // routers (F32), norms, biases and the embedding are generated as without it.
  int64_t row_pool = 0;
  uint64_t seed = 1;
  // Tokenizer: "stories" (the 512-piece SentencePiece vocabulary of
  // stories260K, n_vocab 512), "llama3" (the 128256-token Llama 3.2 BPE vocab),
  // "gemma4" (a Gemma-4-style BPE over UTF-8 with merges derived from the
  // stories pieces, Gemma 4's special tokens, padded to `vocab`) or "harmony"
  // (gpt-oss's, the default of its gpt-oss-20b preset: o200k_harmony's 201088 ids with the
  // harmony control tokens at their real ids, Llama 3's BPE below them, filler
  // pieces between).
  std::string tokenizer = "stories";
  // The Jinja chat template stored with the model (GGUF tokenizer.chat_template;
  // HF chat_template.jinja and tokenizer_config.json); "" = the tokenizer's own.
  std::string chat_template;
  SynthScript script;  // empty = random weights only
  // Embedding models (qwen3, gemma3; synth_embedding.cpp). pooling: "" = none
  // declared (a generative model), else none|mean|cls|last, written as
  // sentence-transformers modules (HF) and <arch>.pooling_type (GGUF). An
  // embedding spec's HF form is a base model without a head (Qwen3Model,
  // Gemma3TextModel: tensors without the "model." prefix). bidirectional
  // (gemma3 only): EmbeddingGemma's use_bidirectional_attention, GGUF arch
  // gemma-embedding. dense: output widths of the Dense modules after pooling
  // (EmbeddingGemma: {4 * d_model, d_model}); the last must be d_model for llama.cpp.
  std::string pooling;
  bool bidirectional = false;
  std::vector<int64_t> dense;
  // gemma3 only (synth_vision.cpp; og-synth --vision): a SigLIP tower and
  // Gemma 3's projector beside the text model, the stories vocabulary given
  // Gemma 3's turn and image tokens (ids 512-516) and a Gemma-3-style chat
  // template. HF: a Gemma3ForConditionalGeneration directory holding the
  // tower; GGUF: the text model, the tower apart through write_mmproj.
  bool vision = false;
  int64_t vision_image_size = 56;  // 4 x 4 patches of 14
  int64_t vision_patch_size = 14;
  int64_t vision_hidden = 32;
  int64_t vision_d_ff = 64;
  int64_t vision_layers = 2;
  int64_t vision_heads = 4;
  int64_t vision_tokens = 4;       // soft tokens per image (pooled 2 x 2)
};

// The embedding form of a tiny qwen3 (last-token pooling, as
// Qwen3-Embedding) or gemma3 (bidirectional, mean pooling, dense 4d -> d, as
// EmbeddingGemma) spec; og::Error for other families.
SynthSpec tiny_embedding_spec(Family f);

// Small shapes for tests, windows smaller than test sequences (e.g. 8).
SynthSpec tiny_spec(Family f);
// Qwen3-30B-A3B shapes: d_model 2048, 48 layers, 32 heads, 4 KV heads, head_dim 128, 128 experts of
// width 768 with 8 used, vocab 128256 (the llama3 tokenizer; the real one has 151936), Q4_K weights.
SynthSpec qwen3_30b_a3b_spec();
// gpt-oss-20b shapes: d_model 2880, 24 layers (sliding window 128 on even
// layers), 64 heads of 64, 8 KV heads, 32 experts of 2880 with 4 used, YaRN
// 32 over 4096; the harmony tokenizer (201088 tokens, as o200k_harmony),
// experts in the spec's weight dtype (MXFP4), other matrices Q8_0.
SynthSpec gpt_oss_20b_spec();
// Llama-3.2-1B shapes: d_model 2048, 16 layers, 32 heads, 8 KV heads, d_ff 8192, vocab 128256.
SynthSpec llama32_1b_spec();
// Gemma 4 E2B text shapes (GEMMA4.md §1): d_model 1536, 35 layers (4 sliding : 1 full), 8 heads, 1 KV
// head, head dims 256/512, d_ff 6144 (12288 on the 20 KV-sharing layers), per-layer inputs 256, vocab 262144.
SynthSpec gemma4_e2b_spec();
// The gemma4 tokenizer's own pieces (specials, bytes, newline runs, the
// stories pieces): the smallest `vocab`, the one without <unusedN> padding.
int64_t gemma4_base_vocab();

// Throws og::Error on a spec that cannot be written or a missing testdata tokenizer.
void write_gguf(const SynthSpec& spec, const std::string& path);
void write_hf(const SynthSpec& spec, const std::string& dir);  // creates dir
// The vision spec's tower as llama.cpp's mmproj GGUF (clip.* keys, v.* / mm.*
// tensors): the same values as the HF form's, f32 (f16/bf16 when the spec's
// weight dtype is one), so both loads give the same rows.
void write_mmproj(const SynthSpec& spec, const std::string& path);

// ../shared/testdata as compiled in (OG_TESTDATA_DIR) unless $OFFGRAPH_TESTDATA is set.
std::string testdata_dir();

}  // namespace og::synth
