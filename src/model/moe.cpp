// Mixture-of-experts blocks (see moe.h): routing, the grouped step and its
// plain twin. Both sum a row's experts in rank order, so they differ only by
// what the matmul kernels do with more rows at once.
#include "model/moe.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace og {
namespace {

template <class T>
void grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

// gpt-oss's clamped SwiGLU (ggml's swiglu_oai, alpha 1.702, limit 7):
// g = min(gate, 7), u = clamp(up, -7, 7), gate = (u + 1) · g · σ(1.702 g).
void swiglu_oai_mul(float* gate, const float* up, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit);
    const float u = std::clamp(up[i], -kLimit, kLimit);
    gate[i] = g / (1.0f + std::exp(-kAlpha * g)) * (u + 1.0f);
  }
}

void expert_activation(const LayerConfig& L, float* gate, const float* up, int64_t n) {
  if (L.expert_swiglu_oai) return swiglu_oai_mul(gate, up, n);
  switch (L.activation) {
    case Activation::kSilu: kernels::silu_mul(gate, up, n); break;
    case Activation::kGeluTanh: kernels::gelu_tanh_mul(gate, up, n); break;
    default: fail("mixture of experts: activation ", activation_name(L.activation), " is not supported in experts");
  }
}

// y[r] += b for m rows of width b_width, b = table row e (empty table: nothing).
void add_bias_rows(float* y, const std::vector<float>& table, int e, int64_t width, int64_t m) {
  if (table.empty()) return;
  const float* b = table.data() + int64_t{e} * width;
  for (int64_t r = 0; r < m; ++r) kernels::add(y + r * width, b, width);
}

// y += w · x over n values.
void add_scaled(float* y, const float* x, float w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
}

// Per-thread scratch of moe_ffn (grown, never shrunk), slots = n * n_experts_used.
struct MoeScratch {
  std::vector<float> logits;   // [n, n_experts]
  MoeRouting route;            // [n, k]
  std::vector<int64_t> start;  // [n_experts + 1] first grouped slot of each expert
  std::vector<int64_t> cursor; // [n_experts] the next grouped slot of each expert while sorting
  std::vector<int64_t> order;  // [slots] grouped position -> slot (row * k + rank)
  std::vector<int64_t> where;  // [slots] slot -> grouped position
  std::vector<float> xg;       // [slots, d_model] the gathered rows, grouped by expert
  std::vector<float> gate;     // [slots, d_ff_expert]
  std::vector<float> up;       // [slots, d_ff_expert]
  std::vector<float> yg;       // [slots, d_model] each slot's expert output
  std::vector<int> active;     // the experts some row chose, in index order
};

MoeScratch& moe_scratch() {
  thread_local MoeScratch s;
  return s;
}

thread_local int64_t t_expert_bytes = 0;  // moe_expert_bytes_read

int64_t expert_bytes(const LayerWeights& w, int e) {
  return w.w_gate_exps[e].nbytes() + w.w_up_exps[e].nbytes() + w.w_down_exps[e].nbytes();
}

constexpr int kMaxUsed = 64;  // experts per token under softmax-after-top-k (a stack array)

void check_layer(const LayerConfig& L, const LayerWeights& w) {
  OG_CHECK(L.n_experts > 0 && L.n_experts_used > 0 && L.n_experts_used <= L.n_experts &&
               static_cast<int>(w.w_gate_exps.size()) == L.n_experts &&
               static_cast<int>(w.w_up_exps.size()) == L.n_experts &&
               static_cast<int>(w.w_down_exps.size()) == L.n_experts,
           "mixture of experts: the layer's weights do not match its ", L.n_experts, " experts");
  OG_CHECK(w.b_router.size() == (L.has_router_bias ? size_t(L.n_experts) : 0) &&
               w.b_down_exps.size() == (L.has_expert_bias ? size_t(L.n_experts) * w.w_down_exps[0].shape[0] : 0),
           "mixture of experts: the layer's biases do not match its experts");
}

// The router's logits [n, n_experts] for x [n, d_model], with its bias.
void router_logits(const LayerConfig& L, const LayerWeights& w, const float* x, int64_t n, float* logits) {
  kernels::matmul(w.w_router, x, n, logits);
  if (L.has_router_bias)
    for (int64_t r = 0; r < n; ++r) kernels::add(logits + r * L.n_experts, w.b_router.data(), L.n_experts);
}

// A step runs whole experts on each pool thread (their products inline on it)
// when no expert is more than half of a thread's even share of the step's
// work, an expert costing its rows plus kExpertReadRows (reading its weights
// costs about as much as multiplying that many rows). Else each product is
// split over the pool, so that an expert most rows chose (a skewed routing,
// few experts) does not hold one thread alone while the others wait.
constexpr int64_t kExpertReadRows = 4;

bool whole_experts_per_thread(int64_t n_active, int64_t slots, int64_t most_rows, int threads) {
  const int64_t total = slots + n_active * kExpertReadRows;
  return threads > 1 && 2 * threads * (most_rows + kExpertReadRows) <= total;
}

// One expert's FFN over its m gathered rows xg [m, d]: gate and up [m, ff]
// (scratch), the expert's output yg [m, d].
void run_expert(const LayerConfig& L, const LayerWeights& w, int e, const float* xg, int64_t m, int64_t d,
                int64_t ff, float* gate, float* up, float* yg) {
  const kernels::MatmulTarget gate_up[] = {{&w.w_gate_exps[e], gate}, {&w.w_up_exps[e], up}};
  kernels::matmul_group(gate_up, xg, m);
  add_bias_rows(gate, w.b_gate_exps, e, ff, m);
  add_bias_rows(up, w.b_up_exps, e, ff, m);
  expert_activation(L, gate, up, m * ff);
  kernels::matmul(w.w_down_exps[e], gate, m, yg);
  add_bias_rows(yg, w.b_down_exps, e, d, m);
}

}  // namespace

void moe_route(const LayerConfig& L, float* logits, int64_t n, MoeRouting& out) {
  const int E = L.n_experts, k = L.n_experts_used;
  OG_CHECK(!L.expert_softmax_after_topk || k <= kMaxUsed, "mixture of experts: ", k, " experts per token is more than ",
           kMaxUsed);
  grow(out.expert, n * k);
  grow(out.weight, n * k);
  std::vector<int32_t> idx(static_cast<size_t>(E));
  for (int64_t r = 0; r < n; ++r) {
    float* p = logits + r * E;
    if (L.expert_softmax_after_topk) {
      // gpt-oss: the k largest logits, then the softmax over those k alone.
      for (int e = 0; e < E; ++e) idx[e] = e;
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                        [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
      float w[kMaxUsed];
      for (int j = 0; j < k; ++j) w[j] = p[idx[j]];
      kernels::softmax(w, k);
      for (int j = 0; j < k; ++j) {
        out.expert[r * k + j] = idx[j];
        out.weight[r * k + j] = w[j];
      }
      continue;
    }
    kernels::softmax(p, E);
    for (int e = 0; e < E; ++e) idx[e] = e;
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float sum = 0;
    for (int j = 0; j < k; ++j) sum += p[idx[j]];
    // llama.cpp clamps the sum at the smallest normal f16 before dividing.
    const float div = L.expert_weights_norm ? std::max(sum, 6.103515625e-5f) : 1.0f;
    for (int j = 0; j < k; ++j) {
      out.expert[r * k + j] = idx[j];
      out.weight[r * k + j] = p[idx[j]] / div;
    }
  }
}

void moe_ffn(const LayerConfig& L, const LayerWeights& w, const float* x, int64_t n, int64_t d, float* y) {
  check_layer(L, w);
  const int E = L.n_experts, k = L.n_experts_used;
  const int64_t ff = L.d_ff_expert, slots = n * k;
  MoeScratch& s = moe_scratch();
  grow(s.logits, n * E);
  router_logits(L, w, x, n, s.logits.data());
  moe_route(L, s.logits.data(), n, s.route);
  // Counting sort of the slots by expert (stable: row order within an expert).
  s.start.assign(static_cast<size_t>(E) + 1, 0);
  for (int64_t i = 0; i < slots; ++i) ++s.start[s.route.expert[i] + 1];
  for (int e = 0; e < E; ++e) s.start[e + 1] += s.start[e];
  grow(s.order, slots);
  grow(s.where, slots);
  s.cursor.assign(s.start.begin(), s.start.end() - 1);
  for (int64_t i = 0; i < slots; ++i) s.order[s.cursor[s.route.expert[i]]++] = i;
  for (int64_t g = 0; g < slots; ++g) s.where[s.order[g]] = g;
  grow(s.xg, slots * d);
  grow(s.gate, slots * ff);
  grow(s.up, slots * ff);
  grow(s.yg, slots * d);
  for (int64_t g = 0; g < slots; ++g) std::copy_n(x + (s.order[g] / k) * d, d, s.xg.data() + g * d);
  // The experts some row chose (the others are never read), in index order.
  s.active.clear();
  int64_t most = 0;
  for (int e = 0; e < E; ++e) {
    if (s.start[e + 1] == s.start[e]) continue;
    s.active.push_back(e);
    most = std::max(most, s.start[e + 1] - s.start[e]);
    t_expert_bytes += expert_bytes(w, e);
  }
  const auto rows = [&](int e) { return s.start[e + 1] - s.start[e]; };
  const auto run = [&](int e) {
    const int64_t g0 = s.start[e];
    run_expert(L, w, e, s.xg.data() + g0 * d, rows(e), d, ff, s.gate.data() + g0 * ff, s.up.data() + g0 * ff,
               s.yg.data() + g0 * d);
  };
  const int64_t n_active = static_cast<int64_t>(s.active.size());
  ThreadPool& pool = thread_pool();
  if (whole_experts_per_thread(n_active, slots, most, pool.size())) {
    // One pool job a step, not two per expert: at 8 sessions of a Qwen3-30B-A3B shape
    // (~50 experts of 1-3 rows a layer) the split products were pieces of a few
    // microseconds each, and a step waited on the pool ~100 times a layer.
    pool.parallel_for(n_active, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) run(s.active[static_cast<size_t>(i)]);
    });
  } else {
    for (const int e : s.active) run(e);
  }
  std::fill(y, y + n * d, 0.0f);
  for (int64_t i = 0; i < slots; ++i)
    add_scaled(y + (i / k) * d, s.yg.data() + s.where[i] * d, s.route.weight[i], d);
}

void moe_ffn_plain(const LayerConfig& L, const LayerWeights& w, const float* x, int64_t n, int64_t d, float* y) {
  check_layer(L, w);
  const int E = L.n_experts, k = L.n_experts_used;
  const int64_t ff = L.d_ff_expert;
  std::vector<float> logits(static_cast<size_t>(E)), gate(static_cast<size_t>(ff)), up(static_cast<size_t>(ff));
  std::vector<float> out(static_cast<size_t>(d));
  MoeRouting route;
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * d;
    router_logits(L, w, xr, 1, logits.data());
    moe_route(L, logits.data(), 1, route);
    float* yr = y + r * d;
    std::fill(yr, yr + d, 0.0f);
    for (int j = 0; j < k; ++j) {
      const int e = route.expert[j];
      t_expert_bytes += expert_bytes(w, e);
      kernels::matmul(w.w_gate_exps[e], xr, 1, gate.data());
      kernels::matmul(w.w_up_exps[e], xr, 1, up.data());
      add_bias_rows(gate.data(), w.b_gate_exps, e, ff, 1);
      add_bias_rows(up.data(), w.b_up_exps, e, ff, 1);
      expert_activation(L, gate.data(), up.data(), ff);
      kernels::matmul(w.w_down_exps[e], gate.data(), 1, out.data());
      add_bias_rows(out.data(), w.b_down_exps, e, d, 1);
      add_scaled(yr, out.data(), route.weight[j], d);
    }
  }
}

int64_t moe_expert_bytes_read() { return t_expert_bytes; }

}  // namespace og
