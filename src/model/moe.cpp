// Mixture-of-experts blocks (see moe.h): routing, the grouped step and its
// plain twin. Both sum a row's experts in rank order, so they differ only by
// what the matmul kernels do with more rows at once.
#include "model/moe.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/ops.h"

namespace og {
namespace {

template <class T>
void grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

void activation_mul(Activation a, float* gate, const float* up, int64_t n) {
  switch (a) {
    case Activation::kSilu: kernels::silu_mul(gate, up, n); break;
    case Activation::kGeluTanh: kernels::gelu_tanh_mul(gate, up, n); break;
  }
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
};

MoeScratch& moe_scratch() {
  thread_local MoeScratch s;
  return s;
}

void check_layer(const LayerConfig& L, const LayerWeights& w) {
  OG_CHECK(L.n_experts > 0 && L.n_experts_used > 0 && L.n_experts_used <= L.n_experts &&
               static_cast<int>(w.w_gate_exps.size()) == L.n_experts &&
               static_cast<int>(w.w_up_exps.size()) == L.n_experts &&
               static_cast<int>(w.w_down_exps.size()) == L.n_experts,
           "mixture of experts: the layer's weights do not match its ", L.n_experts, " experts");
}

}  // namespace

void moe_route(const LayerConfig& L, float* logits, int64_t n, MoeRouting& out) {
  const int E = L.n_experts, k = L.n_experts_used;
  grow(out.expert, n * k);
  grow(out.weight, n * k);
  std::vector<int32_t> idx(static_cast<size_t>(E));
  for (int64_t r = 0; r < n; ++r) {
    float* p = logits + r * E;
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
  kernels::matmul(w.w_router, x, n, s.logits.data());
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
  for (int e = 0; e < E; ++e) {
    const int64_t g0 = s.start[e], m = s.start[e + 1] - g0;
    if (m == 0) continue;  // an expert no row chose is never read
    float* gate = s.gate.data() + g0 * ff;
    float* up = s.up.data() + g0 * ff;
    const kernels::MatmulTarget gate_up[] = {{&w.w_gate_exps[e], gate}, {&w.w_up_exps[e], up}};
    kernels::matmul_group(gate_up, s.xg.data() + g0 * d, m);
    activation_mul(L.activation, gate, up, m * ff);
    kernels::matmul(w.w_down_exps[e], gate, m, s.yg.data() + g0 * d);
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
    kernels::matmul(w.w_router, xr, 1, logits.data());
    moe_route(L, logits.data(), 1, route);
    float* yr = y + r * d;
    std::fill(yr, yr + d, 0.0f);
    for (int j = 0; j < k; ++j) {
      const int e = route.expert[j];
      kernels::matmul(w.w_gate_exps[e], xr, 1, gate.data());
      kernels::matmul(w.w_up_exps[e], xr, 1, up.data());
      activation_mul(L.activation, gate.data(), up.data(), ff);
      kernels::matmul(w.w_down_exps[e], gate.data(), 1, out.data());
      add_scaled(yr, out.data(), route.weight[j], d);
    }
  }
}

}  // namespace og
