// Synthetic model specs, the tensor plan of every family, and the
// deterministic weight generator (splitmix64 + Box-Muller, one stream per
// tensor name so tensors can be produced in any order, one at a time).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "base/error.h"
#include "synth/synth_internal.h"

#ifndef OG_TESTDATA_DIR
#define OG_TESTDATA_DIR "../shared/testdata"
#endif

namespace og::synth {

namespace {

struct FamilyName {
  Family f;
  const char* name;
};
constexpr FamilyName kFamilies[] = {{Family::kLlama, "llama"},
                                    {Family::kQwen2, "qwen2"},
                                    {Family::kQwen3, "qwen3"},
                                    {Family::kMistral, "mistral"},
                                    {Family::kGemma3, "gemma3"},
                                    {Family::kGemma4, "gemma4"},
                                    {Family::kQwen3Moe, "qwen3moe"},
                                    {Family::kMixtral, "mixtral"},
                                    {Family::kPhi3, "phi3"},
                                    {Family::kGptOss, "gpt-oss"},
                                    {Family::kBert, "bert"},
                                    {Family::kNomicBert, "nomic-bert"}};

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// n standard normals from the stream (seed, name).
std::vector<float> normals(uint64_t seed, const std::string& name, int64_t n) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ull ^ fnv1a(name);
  std::vector<float> out(static_cast<size_t>(n));
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t k = 0; k < n; k += 2) {
    // u1 in (0, 1], u2 in [0, 1): 53 random bits each.
    double u1 = (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    out[static_cast<size_t>(k)] = static_cast<float>(r * std::cos(kTwoPi * u2));
    if (k + 1 < n) out[static_cast<size_t>(k + 1)] = static_cast<float>(r * std::sin(kTwoPi * u2));
  }
  return out;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

const char* family_name(Family f) {
  for (const auto& e : kFamilies)
    if (e.f == f) return e.name;
  return "?";
}

bool family_from_name(const std::string& s, Family* out) {
  for (const auto& e : kFamilies)
    if (s == e.name) {
      *out = e.f;
      return true;
    }
  return false;
}

SynthSpec tiny_spec(Family f) {
  if (f == Family::kBert || f == Family::kNomicBert) return tiny_encoder_spec(f);
  SynthSpec s;
  s.family = f;
  switch (f) {
    case Family::kBert:
    case Family::kNomicBert:
      break;  // tiny_encoder_spec above
    case Family::kLlama:
      s.tied = false;  // exercises output.weight / lm_head.weight
      break;
    case Family::kQwen2:
      s.rope_base = 1e6;
      s.rms_eps = 1e-6;
      break;
    case Family::kQwen3:
      s.head_dim = 32;  // n_heads * head_dim = 128 != d_model = 64
      s.rope_base = 1e6;
      s.rms_eps = 1e-6;
      break;
    case Family::kMistral:
      s.window = 8;
      s.tied = false;
      break;
    case Family::kGemma3:
      s.n_layers = 6;  // 5 local : 1 global
      s.n_kv_heads = 1;
      s.window = 8;
      s.sliding_pattern = 6;
      s.rope_base = 1e6;
      s.rope_base_local = 10000.0;
      s.rms_eps = 1e-6;
      break;
    case Family::kQwen3Moe:  // qwen3's attention; 8 experts of 32, 2 used (as 128 of 768, 8 used)
      s.head_dim = 32;
      s.rope_base = 1e6;
      s.rms_eps = 1e-6;
      s.n_experts = 8;
      s.n_experts_used = 2;
      s.d_ff_expert = 32;
      break;
    case Family::kMixtral:  // mistral's attention; 8 experts of d_ff, 2 used (as Mixtral 8x7B)
      s.tied = false;
      s.n_experts = 8;
      s.n_experts_used = 2;
      s.d_ff = 64;
      break;
    case Family::kPhi3:  // Phi-3-mini's structure: untied head, q/k/v and gate/up fused
      s.tied = false;
      break;
    case Family::kGptOss:  // gpt-oss-20b's structure: 4 layers (sliding 8 / full), 8 experts of 32, 4 used
      s.n_layers = 4;
      s.window = 8;
      s.tied = false;
      s.rope_base = 150000.0;
      s.n_experts = 8;
      s.n_experts_used = 4;
      s.d_ff_expert = 32;
      s.d_ff = 32;
      break;
    case Family::kGemma4:
      // E2B's structure in miniature: (4 sliding, 1 full) x 2, the last 5
      // layers share KV (4 sliding -> layer 3, 1 full -> layer 4: as in E2B,
      // the last owner layer is full and the one before it sliding, which
      // llama.cpp requires of the donors, GEMMA4.md 5), full
      // layers with twice the head size and a quarter of it rotating. A
      // wider stream than the other tiny specs: ten layers of unscaled
      // attention and post-norms amplify f32 rounding less.
      s.d_model = 128;
      s.n_layers = 10;
      s.n_kv_heads = 1;
      s.head_dim = 16;
      s.head_dim_full = 32;
      s.window = 8;
      s.sliding_pattern = 5;
      s.n_shared_kv = 5;
      s.d_per_layer = 8;
      s.double_wide_mlp = true;
      s.partial_rotary = 0.25;
      s.final_softcap = 30.0;
      s.layer_scale = true;
      s.rope_base = 1e6;
      s.rope_base_local = 10000.0;
      s.rms_eps = 1e-6;
      s.tokenizer = "gemma4";
      s.vocab = 768;
      break;
  }
  return s;
}

SynthSpec gemma4_e2b_spec() {
  SynthSpec s = tiny_spec(Family::kGemma4);
  s.d_model = 1536;
  s.n_layers = 35;
  s.n_heads = 8;
  s.n_kv_heads = 1;
  s.head_dim = 256;
  s.head_dim_full = 512;
  s.d_ff = 6144;
  s.n_ctx = 131072;
  s.window = 512;
  s.n_shared_kv = 20;
  s.d_per_layer = 256;
  s.vocab = 262144;
  s.weight_dtype = DType::Q4_K;
  return s;
}

SynthSpec qwen3_30b_a3b_spec() {
  SynthSpec s = tiny_spec(Family::kQwen3Moe);
  s.d_model = 2048;
  s.n_layers = 48;
  s.n_heads = 32;
  s.n_kv_heads = 4;
  s.head_dim = 128;
  s.d_ff = 6144;
  s.n_experts = 128;
  s.n_experts_used = 8;
  s.d_ff_expert = 768;
  s.n_ctx = 40960;
  s.weight_dtype = DType::Q4_K;
  s.tokenizer = "llama3";
  return s;
}

SynthSpec llama32_1b_spec() {
  SynthSpec s;
  s.family = Family::kLlama;
  s.d_model = 2048;
  s.n_layers = 16;
  s.n_heads = 32;
  s.n_kv_heads = 8;
  s.head_dim = 64;
  s.d_ff = 8192;
  s.n_ctx = 131072;
  s.rope_base = 500000.0;
  s.rms_eps = 1e-5;
  s.tied = true;
  s.weight_dtype = DType::Q4_K;  // a benchmark-sized GGUF; F32 (~6 GB) also works, streamed
  s.tokenizer = "llama3";
  return s;
}

std::string testdata_dir() {
  if (const char* env = std::getenv("OFFGRAPH_TESTDATA")) {
    if (*env) return env;
  }
  return OG_TESTDATA_DIR;
}

int64_t n_vocab(const SynthSpec& spec) {
  if (spec.tokenizer == "stories") return 512 + vision_extra_tokens(spec);
  if (spec.tokenizer == "llama3") return 128256;
  if (spec.tokenizer == "bert") return bert_vocab_size();
  if (spec.tokenizer == "harmony") return harmony_vocab_size();
  if (spec.tokenizer == "gemma4") return spec.vocab > 0 ? spec.vocab : gemma4_base_vocab();
  fail("synthetic model: unknown tokenizer '", spec.tokenizer, "' (expected stories, llama3, gemma4 or harmony)");
}

void validate(const SynthSpec& s) {
  auto positive = [](int64_t v, const char* what) {
    OG_CHECK(v > 0 && v <= (int64_t{1} << 24), "synthetic model: ", what, " = ", v, " must be in 1..2^24");
  };
  positive(s.d_model, "d_model");
  positive(s.n_layers, "n_layers");
  positive(s.n_heads, "n_heads");
  positive(s.n_kv_heads, "n_kv_heads");
  positive(s.head_dim, "head_dim");
  positive(s.d_ff, "d_ff");
  positive(s.n_ctx, "n_ctx");
  validate_vision(s);
  OG_CHECK(s.n_heads % s.n_kv_heads == 0, "synthetic model: n_heads ", s.n_heads, " is not a multiple of n_kv_heads ",
           s.n_kv_heads);
  OG_CHECK(s.head_dim % 2 == 0, "synthetic model: head_dim ", s.head_dim, " must be even (RoPE pairs)");
  OG_CHECK(s.window >= 0 && s.window <= s.n_ctx, "synthetic model: window ", s.window, " must be in 0..n_ctx");
  OG_CHECK(s.sliding_pattern > 0, "synthetic model: sliding_pattern must be positive");
  OG_CHECK(s.rope_base > 1 && s.rope_base_local > 1, "synthetic model: rope bases must be > 1");
  OG_CHECK(s.rms_eps > 0 && s.rms_eps < 1, "synthetic model: rms_eps must be in (0, 1)");
  OG_CHECK(s.window == 0 || s.family == Family::kMistral || s.family == Family::kMixtral ||
               s.family == Family::kGemma3 || s.family == Family::kGemma4 || s.family == Family::kGptOss,
           "synthetic model: a sliding window is only written for mistral, mixtral, gemma3, gemma4 and gpt-oss");
  if (s.family == Family::kGemma4) validate_gemma4(s);
  const bool moe = s.family == Family::kQwen3Moe || s.family == Family::kMixtral || s.family == Family::kGptOss;
  OG_CHECK(moe == (s.n_experts > 0), "synthetic model: experts (n_experts ", s.n_experts,
           ") are written for qwen3moe, mixtral and gpt-oss only, and those need them");
  if (moe) {
    OG_CHECK(s.n_experts <= 1024 && s.n_experts_used > 0 && s.n_experts_used <= s.n_experts,
             "synthetic model: n_experts_used ", s.n_experts_used, " must be in 1..n_experts (", s.n_experts, ")");
    if (s.family == Family::kQwen3Moe || s.family == Family::kGptOss) positive(s.d_ff_expert, "d_ff_expert");
  }
  if (s.family == Family::kGptOss) {
    OG_CHECK(s.window > 0, "synthetic model: gpt-oss needs a sliding window (its even layers slide)");
    OG_CHECK(s.yarn_factor >= 1 && s.yarn_original > 1, "synthetic model: gpt-oss needs YaRN factor >= 1 and an "
             "original context > 1");
  }
  OG_CHECK(s.longrope_original == 0 || (s.family == Family::kPhi3 && s.longrope_original > 1 &&
                                        s.longrope_original < s.n_ctx),
           "synthetic model: longrope (original context ", s.longrope_original,
           ") is written for phi3 only, with an original context in 2..n_ctx-1");
  OG_CHECK(s.family != Family::kPhi3 || s.n_heads * s.head_dim == s.d_model, "synthetic model: phi3 needs n_heads * ",
           "head_dim (", s.n_heads * s.head_dim, ") = d_model (", s.d_model, "): Phi3Config has no head_dim");
  if (s.family == Family::kPhi3 && s.partial_rotary != 1.0) {  // Phi-4-mini: partial_rotary_factor
    const int64_t n_rot = static_cast<int64_t>(s.head_dim * s.partial_rotary);
    OG_CHECK(s.partial_rotary > 0 && s.partial_rotary < 1 && n_rot > 0 && n_rot % 2 == 0,
             "synthetic model: phi3 partial_rotary ", s.partial_rotary, " must rotate a positive even number of dims");
  }
  OG_CHECK(s.partial_rotary == 1.0 || s.family == Family::kPhi3 || s.family == Family::kGemma4,
           "synthetic model: partial_rotary is written for gemma4 and phi3 only");
  validate_embedding(s);
  OG_CHECK(dtype_info(static_cast<uint32_t>(s.weight_dtype)), "synthetic model: unknown weight dtype");
  n_vocab(s);
  script_plan(s);  // a script that cannot be written fails here, before any file is made
}

bool is_sliding_layer(const SynthSpec& s, int64_t layer) {
  if (s.window == 0) return false;
  if (s.family == Family::kMistral || s.family == Family::kMixtral) return true;
  if (s.family == Family::kGemma3 || s.family == Family::kGemma4) return (layer + 1) % s.sliding_pattern != 0;
  return false;
}

// A layer's router and experts in HF names (h: "model.layers.N."): Qwen3-MoE
// mlp.gate + mlp.experts.E.{gate,up,down}_proj, Mixtral block_sparse_moe.gate
// + block_sparse_moe.experts.E.{w1,w3,w2}.
void plan_experts(const SynthSpec& s, const std::string& h, std::vector<PlannedTensor>& out) {
  const bool mixtral = s.family == Family::kMixtral;
  const int64_t d = s.d_model, ff = mixtral ? s.d_ff : s.d_ff_expert;
  const std::string block = h + (mixtral ? "block_sparse_moe." : "mlp.");
  auto add = [&](std::string name, std::vector<int64_t> shape, int64_t fan_in) {
    PlannedTensor t;
    t.hf_name = std::move(name);
    t.shape = std::move(shape);
    t.kind = Kind::kLinear;
    t.fan_in = fan_in;
    out.push_back(std::move(t));
  };
  add(block + "gate.weight", {s.n_experts, d}, d);
  for (int64_t e = 0; e < s.n_experts; ++e) {
    const std::string x = cat(block, "experts.", e, ".");
    add(x + (mixtral ? "w1" : "gate_proj") + ".weight", {ff, d}, d);
    add(x + (mixtral ? "w3" : "up_proj") + ".weight", {ff, d}, d);
    add(x + (mixtral ? "w2" : "down_proj") + ".weight", {d, ff}, ff);
  }
}

std::vector<PlannedTensor> plan(const SynthSpec& s) {
  validate(s);
  if (s.family == Family::kGemma4) return plan_gemma4(s);
  if (s.family == Family::kGptOss) return plan_gpt_oss(s);
  if (is_encoder(s)) return plan_encoder(s);
  const int64_t d = s.d_model, V = n_vocab(s), q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  const bool gemma = s.family == Family::kGemma3;
  std::vector<PlannedTensor> out;
  auto add = [&](std::string hf, std::vector<int64_t> shape, Kind kind, int64_t fan_in = 1) {
    PlannedTensor t;
    t.hf_name = std::move(hf);
    t.shape = std::move(shape);
    t.kind = kind;
    t.fan_in = fan_in;
    t.gemma_norm = gemma && kind == Kind::kNorm;
    out.push_back(std::move(t));
  };
  const std::string prefix = is_embedding(s) ? "" : "model.";  // a base model without a head
  add(prefix + "embed_tokens.weight", {V, d}, Kind::kEmbed, d);
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const std::string h = cat(prefix, "layers.", l, ".");
    add(h + "input_layernorm.weight", {d}, Kind::kNorm);
    if (s.family == Family::kPhi3) {
      add(h + "self_attn.qkv_proj.weight", {q_dim + 2 * kv_dim, d}, Kind::kLinear, d);
    } else {
      add(h + "self_attn.q_proj.weight", {q_dim, d}, Kind::kLinear, d);
      add(h + "self_attn.k_proj.weight", {kv_dim, d}, Kind::kLinear, d);
      add(h + "self_attn.v_proj.weight", {kv_dim, d}, Kind::kLinear, d);
    }
    if (s.family == Family::kQwen2) {
      add(h + "self_attn.q_proj.bias", {q_dim}, Kind::kBias);
      add(h + "self_attn.k_proj.bias", {kv_dim}, Kind::kBias);
      add(h + "self_attn.v_proj.bias", {kv_dim}, Kind::kBias);
    }
    if (s.family == Family::kQwen3 || s.family == Family::kQwen3Moe || gemma) {
      add(h + "self_attn.q_norm.weight", {s.head_dim}, Kind::kNorm);
      add(h + "self_attn.k_norm.weight", {s.head_dim}, Kind::kNorm);
    }
    add(h + "self_attn.o_proj.weight", {d, q_dim}, Kind::kLinear, q_dim);
    if (gemma) {
      add(h + "post_attention_layernorm.weight", {d}, Kind::kNorm);
      add(h + "pre_feedforward_layernorm.weight", {d}, Kind::kNorm);
      add(h + "post_feedforward_layernorm.weight", {d}, Kind::kNorm);
    } else {
      add(h + "post_attention_layernorm.weight", {d}, Kind::kNorm);
    }
    if (s.n_experts > 0) {
      plan_experts(s, h, out);
      continue;
    }
    if (s.family == Family::kPhi3) {
      add(h + "mlp.gate_up_proj.weight", {2 * s.d_ff, d}, Kind::kLinear, d);
    } else {
      add(h + "mlp.gate_proj.weight", {s.d_ff, d}, Kind::kLinear, d);
      add(h + "mlp.up_proj.weight", {s.d_ff, d}, Kind::kLinear, d);
    }
    add(h + "mlp.down_proj.weight", {d, s.d_ff}, Kind::kLinear, s.d_ff);
  }
  add(prefix + "norm.weight", {d}, Kind::kNorm);
  if (!s.tied) add("lm_head.weight", {V, d}, Kind::kLinear, d);
  plan_dense(s, out);
  return out;
}

bool generated_in_blocks(const PlannedTensor& t) {
  return t.kind == Kind::kEmbed && t.shape.size() == 2 && numel(t.shape) > (int64_t{1} << 26);
}

int64_t rows_per_block(const PlannedTensor& t) { return std::max<int64_t>(1, (int64_t{1} << 22) / t.shape[1]); }

std::vector<float> block_values(const SynthSpec& s, const PlannedTensor& t, int64_t block) {
  const int64_t rows = std::min(rows_per_block(t), t.shape[0] - block * rows_per_block(t));
  std::vector<float> v = normals(s.seed, cat(t.hf_name, "#", block), rows * t.shape[1]);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t.fan_in)));
  for (float& x : v) x *= scale;
  apply_script(s, t, v, block * rows_per_block(t));
  return v;
}

std::vector<float> hf_values(const SynthSpec& s, const PlannedTensor& t) {
  if (generated_in_blocks(t)) {
    std::vector<float> all;
    all.reserve(static_cast<size_t>(numel(t.shape)));
    for (int64_t b = 0; b * rows_per_block(t) < t.shape[0]; ++b) {
      const std::vector<float> v = block_values(s, t, b);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  std::vector<float> v = normals(s.seed, t.hf_name, numel(t.shape));
  float scale = 1.0f, offset = 0.0f;
  switch (t.kind) {
    case Kind::kEmbed:
    case Kind::kLinear:
      scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t.fan_in)));
      break;
    case Kind::kBias:
      scale = 0.1f;
      break;
    case Kind::kNorm:  // multiplier near 1: HF gemma applies (1 + w), so w itself is near 0
      scale = 0.1f;
      offset = t.gemma_norm ? 0.0f : 1.0f;
      break;
    case Kind::kScalar:  // a layer output scale near 1 (smaller ones shrink the stream and amplify f32 noise)
      scale = 0.03f;
      offset = 1.0f;
      break;
  }
  for (float& x : v) x = x * scale + offset;
  apply_script(s, t, v, 0);
  return v;
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty() || a.back() == '/') return a + b;
  return a + "/" + b;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path, ": cannot create");
  out << text;
  out.close();
  if (!out) fail(path, ": write failed");
}

}  // namespace og::synth
