// The one generic forward pass: embeddings (and per-layer inputs), then per
// layer norm, q/k/v projections (all rows at once), bias, q/k/v norms, RoPE,
// the cache's update_and_attend, output projection, post-norm, residual, MLP
// (dense, or a mixture of experts: model/moe.h),
// the per-layer input block and output scale; encoders' token-type and
// absolute-position embeddings, LayerNorms and post-residual norms (BERT);
// final norm, logits for the rows
// that want them, soft-capping. Branches only on config fields. hidden_pass
// runs the same layers over a whole-sequence step without a cache (each
// layer attends within the step) and returns the output-normed rows.
#include <algorithm>
#include <cmath>
#include <span>

#include "base/error.h"
#include "kernels/ops.h"
#include "kv/step_attend.h"
#include "model/loader.h"
#include "model/moe.h"

namespace og {
namespace {

// Scratch of a forward call, sized for the widest layer. One per thread,
// reused by every call (grown, never shrunk): a step allocates nothing once
// the thread has run a step as large. Every element a step reads it has
// written first in that step.
struct Scratch {
  std::vector<float> x;     // [n, d_model] the residual stream
  std::vector<float> xn;    // [n, d_model] normed input of a sub-block
  std::vector<float> q;     // [n, n_heads * head_dim_k]
  std::vector<float> k;     // [n, n_kv_heads * head_dim_k]
  std::vector<float> v;     // [n, n_kv_heads * head_dim_v]
  std::vector<float> att;   // [n, n_heads * head_dim_v]
  std::vector<float> tmp;   // [n, d_model] a sub-block's output
  std::vector<float> gate;  // [n, d_ff]
  std::vector<float> up;    // [n, d_ff]
  std::vector<float> pl;    // [n, n_layers * d_per_layer] per-layer inputs (empty when d_per_layer == 0)
  std::vector<float> pl_t;  // [n, n_layers * d_per_layer] their projection part
  std::vector<float> pl_g;  // [n, d_per_layer] one layer's gated per-layer input
  std::vector<double> cs;   // [n, rope_n_rot] one layer's RoPE cos/sin per row (ops.h rope_angles)
  // What cs holds in this forward pass: the angles of cs_freq over cs_rot dims
  // (cs_rot -1: nothing yet). Layers with the same RoPE table reuse them.
  int64_t cs_rot = -1;
  std::vector<float> cs_freq;
  float cs_factor = 1.0f;  // the rope_attn_factor cs was multiplied by
  std::vector<float> sel;   // [n, d_model] the normed rows that want logits
  std::vector<KvRow> kv_rows;  // [n]
  std::vector<KvRow> causal_rows;  // [n] kv_rows without spans, for layers that keep spans closed
};

template <class T>
void grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

Scratch& scratch_for(const ModelConfig& c, int64_t n) {
  thread_local Scratch s;
  int64_t q = 0, k = 0, v = 0, o = 0, ff = 0, rot = 0;
  for (const LayerConfig& L : c.layers) {
    q = std::max<int64_t>(q, int64_t{L.n_heads} * L.head_dim_k);
    k = std::max<int64_t>(k, int64_t{L.n_kv_heads} * L.head_dim_k);
    v = std::max<int64_t>(v, int64_t{L.n_kv_heads} * L.head_dim_v);
    o = std::max<int64_t>(o, int64_t{L.n_heads} * L.head_dim_v);
    ff = std::max<int64_t>(ff, L.n_experts > 0 ? 0 : L.d_ff);  // expert layers use moe.h's scratch
    rot = std::max<int64_t>(rot, L.rope_n_rot);
  }
  for (auto* f : {&s.x, &s.xn, &s.tmp, &s.sel}) grow(*f, n * c.d_model);
  grow(s.q, n * q);
  grow(s.k, n * k);
  grow(s.v, n * v);
  grow(s.att, n * o);
  grow(s.gate, n * ff);
  grow(s.up, n * ff);
  grow(s.pl, n * c.n_layers() * c.d_per_layer);
  grow(s.pl_t, n * c.n_layers() * c.d_per_layer);
  grow(s.pl_g, n * c.d_per_layer);
  grow(s.cs, n * rot);
  return s;
}

// y[r] = rms_norm(x[r]) ⊙ w for each of n rows of width `width`.
void norm_rows(const float* x, const std::vector<float>& w, float eps, int64_t n, int64_t width, float* y) {
  for (int64_t r = 0; r < n; ++r) kernels::rms_norm(x + r * width, w.data(), eps, width, y + r * width);
}

// The model's norm of n rows of width d: RMSNorm, or LayerNorm with bias b
// (empty = none) when c.layer_norm (encoders).
void model_norm_rows(const ModelConfig& c, const float* x, const std::vector<float>& w, const std::vector<float>& b,
                     int64_t n, int64_t width, float* y) {
  if (!c.layer_norm) return norm_rows(x, w, c.eps, n, width, y);
  for (int64_t r = 0; r < n; ++r)
    kernels::layer_norm(x + r * width, w.data(), b.empty() ? nullptr : b.data(), c.eps, width, y + r * width);
}

void add_bias(float* y, const std::vector<float>& b, int64_t n) {
  const int64_t width = static_cast<int64_t>(b.size());
  for (int64_t r = 0; r < n; ++r) kernels::add(y + r * width, b.data(), width);
}

// Gated product act(gate) ⊙ up of n values, in place in gate.
void activation_mul(Activation a, float* gate, const float* up, int64_t n) {
  switch (a) {
    case Activation::kSilu: kernels::silu_mul(gate, up, n); break;
    case Activation::kGeluTanh: kernels::gelu_tanh_mul(gate, up, n); break;
    case Activation::kGeluErf:
      kernels::gelu_erf(gate, n);
      for (int64_t i = 0; i < n; ++i) gate[i] *= up[i];
      break;
  }
}

// Per-head norm (when w is set) then RoPE of x [n, n_heads, head_dim] with
// each row's angles cs [n, rope_n_rot] (rope_angles, once per row and RoPE table).
void heads_norm_rope(const LayerConfig& L, float eps, bool norm, const std::vector<float>& norm_w, int64_t n,
                     const double* cs, int n_heads, float* x) {
  const int64_t hd = L.head_dim_k;
  for (int64_t r = 0; r < n; ++r) {
    for (int h = 0; h < n_heads; ++h) {
      float* head = x + (r * n_heads + h) * hd;
      if (norm) kernels::rms_norm(head, norm_w.data(), eps, hd, head);
      if (L.rope_n_rot > 0) kernels::rope_apply(head, L.rope_n_rot, cs + r * L.rope_n_rot, L.rope_interleaved);
    }
  }
}

// The RoPE table of a run whose context per sequence is `context`: longrope's
// long table beyond rope_long_after (as llama.cpp chooses), else the one table.
const std::vector<float>& rope_table(const LayerConfig& L, int64_t context) {
  return !L.rope_inv_freq_long.empty() && context > L.rope_long_after ? L.rope_inv_freq_long : L.rope_inv_freq;
}

// cache null: a whole-sequence step attended within itself (kv/step_attend.h).
// context: the run's positions per sequence (picks a longrope table).
void attention_block(const ModelConfig& c, const LayerConfig& L, const LayerWeights& w, int cache_id, bool writes,
                     const Batch& batch, const std::vector<KvRow>& kv_rows, KvCache* cache, int64_t context,
                     Scratch& s) {
  const int64_t n = static_cast<int64_t>(batch.rows.size());
  const int64_t d = c.d_model;
  // A post-norm (encoder) layer reads the residual stream itself.
  if (!L.post_norm) norm_rows(s.x.data(), w.attn_norm, c.eps, n, d, s.xn.data());
  const float* in = L.post_norm ? s.x.data() : s.xn.data();
  // q, k and v read the same normed rows: one pool job (ops.h matmul_group).
  const kernels::MatmulTarget qkv[] = {{&w.wq, s.q.data()}, {&w.wk, s.k.data()}, {&w.wv, s.v.data()}};
  kernels::matmul_group(std::span(qkv, writes ? 3 : 1), in, n);
  if (L.has_qkv_bias) add_bias(s.q.data(), w.bq, n);
  const std::vector<float>& freq = rope_table(L, context);
  if (L.rope_n_rot > 0 && (s.cs_rot != L.rope_n_rot || s.cs_freq != freq || s.cs_factor != L.rope_attn_factor)) {
    for (int64_t r = 0; r < n; ++r)
      kernels::rope_angles(batch.rows[r].pos, L.rope_n_rot, freq.data(), s.cs.data() + r * L.rope_n_rot);
    if (L.rope_attn_factor != 1.0f)  // cos and sin scaled, as ggml's rope applies its attn_factor
      for (int64_t i = 0; i < n * L.rope_n_rot; ++i) s.cs[i] *= L.rope_attn_factor;
    s.cs_rot = L.rope_n_rot;
    s.cs_freq = freq;
    s.cs_factor = L.rope_attn_factor;
  }
  heads_norm_rope(L, c.eps, L.has_q_norm, w.q_norm, n, s.cs.data(), L.n_heads, s.q.data());
  if (writes) {
    if (L.has_qkv_bias) {
      add_bias(s.k.data(), w.bk, n);
      add_bias(s.v.data(), w.bv, n);
    }
    heads_norm_rope(L, c.eps, L.has_k_norm, w.k_norm, n, s.cs.data(), L.n_kv_heads, s.k.data());
    if (L.has_v_norm) norm_rows(s.v.data(), w.v_norm, c.eps, n * L.n_kv_heads, L.head_dim_v, s.v.data());
  }
  if (cache != nullptr) {
    cache->update_and_attend(cache_id, kv_rows, s.q.data(), L.n_heads, writes ? s.k.data() : nullptr,
                             writes ? s.v.data() : nullptr, L.attn_scale, s.att.data(),
                             L.has_sinks ? w.sinks.data() : nullptr);
  } else {
    const kv::StepAttendShape shape{L.n_heads, L.n_kv_heads, L.head_dim_k, L.head_dim_v, L.window, c.causal};
    kv::attend_in_step(kv_rows, shape, s.q.data(), s.k.data(), s.v.data(), L.attn_scale, s.att.data(),
                       L.has_sinks ? w.sinks.data() : nullptr);
  }
  kernels::matmul(w.wo, s.att.data(), n, s.tmp.data());
  if (L.has_o_bias) add_bias(s.tmp.data(), w.bo, n);
  if (L.has_post_attn_norm) norm_rows(s.tmp.data(), w.post_attn_norm, c.eps, n, d, s.tmp.data());
  kernels::add(s.x.data(), s.tmp.data(), n * d);
  if (L.post_norm) model_norm_rows(c, s.x.data(), w.attn_out_norm, w.attn_out_norm_b, n, d, s.x.data());
}

// The ungated MLP of an encoder: W_down act(W_up x + b_up) (+ b_down), into s.tmp.
void ungated_mlp(const LayerConfig& L, const LayerWeights& w, const float* in, int64_t n, Scratch& s) {
  kernels::matmul(w.w_up, in, n, s.up.data());
  if (L.has_ffn_bias) add_bias(s.up.data(), w.b_up, n);
  OG_CHECK(L.activation == Activation::kGeluErf, "forward: an ungated MLP with activation ",
           activation_name(L.activation), " is not supported (only gelu)");
  kernels::gelu_erf(s.up.data(), n * L.d_ff);
  kernels::matmul(w.w_down, s.up.data(), n, s.tmp.data());
}

void mlp_block(const ModelConfig& c, const LayerConfig& L, const LayerWeights& w, int64_t n, Scratch& s) {
  const int64_t d = c.d_model;
  if (!L.post_norm) norm_rows(s.x.data(), w.ffn_norm, c.eps, n, d, s.xn.data());
  const float* in = L.post_norm ? s.x.data() : s.xn.data();
  if (L.n_experts > 0) {
    moe_ffn(L, w, in, n, d, s.tmp.data());  // grouped by expert (model/moe.h)
  } else if (!L.ffn_gated) {
    ungated_mlp(L, w, in, n, s);
  } else {
    const kernels::MatmulTarget gate_up[] = {{&w.w_gate, s.gate.data()}, {&w.w_up, s.up.data()}};
    kernels::matmul_group(gate_up, in, n);
    if (L.has_ffn_bias) add_bias(s.up.data(), w.b_up, n);
    activation_mul(L.activation, s.gate.data(), s.up.data(), n * L.d_ff);
    kernels::matmul(w.w_down, s.gate.data(), n, s.tmp.data());
  }
  if (L.has_ffn_bias) add_bias(s.tmp.data(), w.b_down, n);
  if (L.has_post_ffn_norm) norm_rows(s.tmp.data(), w.post_ffn_norm, c.eps, n, d, s.tmp.data());
  kernels::add(s.x.data(), s.tmp.data(), n * d);
  if (L.post_norm) model_norm_rows(c, s.x.data(), w.layer_out_norm, w.layer_out_norm_b, n, d, s.x.data());
}

// pl = (norm(W_proj x / sqrt(d)) + table[token] * sqrt(P)) / sqrt(2), per
// layer slice of P; x is the scaled embedding. Only the step's table rows are read.
void per_layer_inputs(const ModelConfig& c, const Weights& w, const Batch& batch, Scratch& s) {
  const int64_t n = static_cast<int64_t>(batch.rows.size());
  const int64_t P = c.d_per_layer, width = c.n_layers() * P;
  kernels::matmul(w.per_layer_model_proj, s.x.data(), n, s.pl.data());
  kernels::scale(s.pl.data(), 1.0f / std::sqrt(static_cast<float>(c.d_model)), n * width);
  norm_rows(s.pl.data(), w.per_layer_proj_norm, c.eps, n * c.n_layers(), P, s.pl.data());
  for (int64_t r = 0; r < n; ++r) {
    float* t = s.pl_t.data() + r * width;
    kernels::get_row(w.per_layer_token_embd, batch.rows[r].token, t);
    kernels::scale(t, std::sqrt(static_cast<float>(P)), width);
  }
  kernels::add(s.pl.data(), s.pl_t.data(), n * width);
  kernels::scale(s.pl.data(), 1.0f / std::sqrt(2.0f), n * width);
}

// x += norm(W_proj (act(W_gate x) ⊙ pl[l])), then the layer's output scale.
void per_layer_block(const ModelConfig& c, const LayerConfig& L, const LayerWeights& w, int l, int64_t n,
                     Scratch& s) {
  const int64_t d = c.d_model, P = c.d_per_layer;
  if (P > 0) {
    const int64_t width = c.n_layers() * P;
    kernels::matmul(w.w_pl_gate, s.x.data(), n, s.pl_g.data());
    for (int64_t r = 0; r < n; ++r)
      activation_mul(L.activation, s.pl_g.data() + r * P, s.pl.data() + r * width + l * P, P);
    kernels::matmul(w.w_pl_proj, s.pl_g.data(), n, s.tmp.data());
    norm_rows(s.tmp.data(), w.pl_post_norm, c.eps, n, d, s.tmp.data());
    kernels::add(s.x.data(), s.tmp.data(), n * d);
  }
  if (L.has_output_scale) kernels::scale(s.x.data(), w.output_scale, n * d);
}

void compute_logits(const ModelConfig& c, const Weights& w, const Batch& batch, Scratch& s,
                    std::vector<float>& logits) {
  const int64_t d = c.d_model;
  int64_t m = 0;
  for (const BatchRow& r : batch.rows) m += r.want_logits ? 1 : 0;
  // Sized, not zero-filled: the output matmul writes every element (a decode
  // step's 128256 logits were written twice).
  logits.resize(static_cast<size_t>(m) * c.n_vocab);
  if (m == 0) return;
  float* sel = s.sel.data();  // [m, d_model]
  int64_t j = 0;
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    if (!batch.rows[i].want_logits) continue;
    kernels::rms_norm(s.x.data() + i * d, w.output_norm.data(), c.eps, d, sel + j * d);
    ++j;
  }
  kernels::matmul(w.output, sel, m, logits.data());
  if (c.has_output_bias) add_bias(logits.data(), w.output_bias, m);
  if (c.final_logit_softcap > 0) {
    const float cap = c.final_logit_softcap;
    for (float& v : logits) v = cap * std::tanh(v / cap);
  }
}

void check_tokens(const ModelConfig& c, const Batch& batch) {
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    const BatchRow& r = batch.rows[i];
    OG_CHECK(r.token >= 0 && r.token < c.n_vocab, "forward: token id ", r.token, " (row ", i,
             ") is outside the vocabulary [0, ", c.n_vocab, ")");
    OG_CHECK(r.embedding.empty() || static_cast<int64_t>(r.embedding.size()) == c.d_model, "forward: row ", i,
             " carries an embedding of ", r.embedding.size(), " values, but the model's hidden size is ", c.d_model);
  }
}

void check_inputs(const ModelConfig& c, const KvGeometry& geometry, const Batch& batch, const KvCache& cache) {
  OG_CHECK(c.causal, "forward: the model attends bidirectionally (an embedding model): it embeds whole inputs "
           "and cannot generate");
  OG_CHECK(c.has_output_norm, "forward: the model is an encoder without an output head: it embeds and cannot generate");
  check_tokens(c, batch);
  const KvGeometry& g = cache.geometry();
  bool same = g.layer_cache == geometry.layer_cache && g.layer_writes == geometry.layer_writes &&
              g.caches.size() == geometry.caches.size();
  for (size_t i = 0; same && i < g.caches.size(); ++i)
    same = g.caches[i].n_kv_heads == geometry.caches[i].n_kv_heads &&
           g.caches[i].head_dim_k == geometry.caches[i].head_dim_k &&
           g.caches[i].head_dim_v == geometry.caches[i].head_dim_v;
  OG_CHECK(same, "forward: the KV cache was built for a different model geometry");
}

// Embeddings, then every layer; the residual stream is left in s.x. cache
// null: each layer attends within the step (every sequence whole).
void run_layers(const ModelConfig& c, const Weights& w, const KvGeometry& geometry, const Batch& batch,
                const std::vector<KvRow>& kv_rows, KvCache* cache, int64_t context, Scratch& s) {
  const int64_t n = static_cast<int64_t>(batch.rows.size());
  const int64_t d = c.d_model;
  for (int64_t i = 0; i < n; ++i) {
    float* x = s.x.data() + i * d;
    const std::span<const float> in = batch.rows[i].embedding;
    if (!in.empty()) {
      std::copy(in.begin(), in.end(), x);  // an input row (model.h): used as given, never scaled
    } else {
      kernels::get_row(w.token_embd, batch.rows[i].token, x);
      if (c.embedding_scale != 1.0f) kernels::scale(x, c.embedding_scale, d);
    }
    // Encoders: + token type 0 + the absolute position's row (s.tmp is free here).
    if (!w.token_type0.empty()) kernels::add(x, w.token_type0.data(), d);
    if (c.has_pos_embd) {
      kernels::get_row(w.pos_embd, batch.rows[i].pos, s.tmp.data());
      kernels::add(x, s.tmp.data(), d);
    }
  }
  if (c.has_embd_norm) model_norm_rows(c, s.x.data(), w.embd_norm, w.embd_norm_b, n, d, s.x.data());
  if (c.d_per_layer > 0) per_layer_inputs(c, w, batch, s);
  s.cs_rot = -1;  // this batch's RoPE angles are computed by the first layer that needs them
  // A layer that does not open image spans (LayerConfig::opens_image_spans)
  // sees the same rows as causal ones.
  bool spans = false;
  for (const KvRow& r : kv_rows) spans = spans || r.span_end > r.pos + 1;
  if (spans) {
    s.causal_rows.assign(kv_rows.begin(), kv_rows.end());
    for (KvRow& r : s.causal_rows) r.span_end = 0;
  }
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const std::vector<KvRow>& rows = spans && !L.opens_image_spans ? s.causal_rows : kv_rows;
    attention_block(c, L, w.layers[l], geometry.layer_cache[l], geometry.layer_writes[l], batch, rows, cache,
                    context, s);
    mlp_block(c, L, w.layers[l], n, s);
    per_layer_block(c, L, w.layers[l], l, n, s);
  }
}

}  // namespace

void hidden_pass(const ModelConfig& c, const Weights& w, const KvGeometry& geometry, const Batch& batch,
                 std::vector<float>& hidden) {
  const int64_t n = static_cast<int64_t>(batch.rows.size());
  hidden.clear();
  if (n == 0) return;
  check_tokens(c, batch);
  for (size_t i = 0; i < batch.rows.size(); ++i)
    OG_CHECK(batch.rows[i].span_end == 0, "embeddings: row ", i,
             " marks a bidirectional span, which only a cached forward step supports");
  for (size_t i = 0; i < batch.rows.size() && c.has_pos_embd; ++i)
    OG_CHECK(batch.rows[i].pos >= 0 && batch.rows[i].pos < c.n_ctx, "embeddings: position ", batch.rows[i].pos,
             " (row ", i, ") is outside the model's position table [0, ", c.n_ctx, ")");
  for (int l = 0; l < c.n_layers(); ++l)
    OG_CHECK(geometry.layer_writes[l], "embeddings: layer ", l,
             " reads another layer's KV (KV sharing), which a whole-sequence pass does not support");
  Scratch& s = scratch_for(c, n);
  std::vector<KvRow>& kv_rows = s.kv_rows;
  kv_rows.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) kv_rows[i] = KvRow{batch.rows[i].seq, batch.rows[i].pos};
  kv::check_whole_sequences(kv_rows);
  int64_t context = 0;  // the longest sequence: the whole of each is in the step
  for (const BatchRow& r : batch.rows) context = std::max(context, r.pos + 1);
  run_layers(c, w, geometry, batch, kv_rows, nullptr, context, s);
  const int64_t d = c.d_model;
  hidden.resize(static_cast<size_t>(n * d));
  if (c.has_output_norm) norm_rows(s.x.data(), w.output_norm, c.eps, n, d, hidden.data());
  else std::copy(s.x.begin(), s.x.begin() + n * d, hidden.begin());  // an encoder's last layer ends normed
}

KvResult forward_pass(const ModelConfig& c, const Weights& w, const KvGeometry& geometry, const Batch& batch,
                      KvCache& cache, std::vector<float>& logits) {
  // logits keeps its storage into the step (compute_logits resizes it without
  // a zero fill) and is emptied on every way out but success.
  struct EmptyUnlessKept {
    std::vector<float>& v;
    bool keep = false;
    ~EmptyUnlessKept() {
      if (!keep) v.clear();
    }
  } result{logits};
  const int64_t n = static_cast<int64_t>(batch.rows.size());
  if (n == 0) return KvResult::success();
  check_inputs(c, geometry, batch, cache);
  Scratch& s = scratch_for(c, n);
  std::vector<KvRow>& kv_rows = s.kv_rows;
  kv_rows.resize(static_cast<size_t>(n));  // exactly n rows (the cache reads its size)
  for (int64_t i = 0; i < n; ++i) kv_rows[i] = KvRow{batch.rows[i].seq, batch.rows[i].pos, batch.rows[i].span_end};
  KvResult r = cache.begin_step(kv_rows);
  if (!r.ok()) return r;
  try {
    run_layers(c, w, geometry, batch, kv_rows, &cache, cache.policy().max_capacity, s);
    compute_logits(c, w, batch, s, logits);
  } catch (...) {
    cache.abort_step();
    throw;
  }
  cache.end_step();
  result.keep = true;
  return r;
}

}  // namespace og
