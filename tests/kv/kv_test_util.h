// Helpers for the kv tests: geometry builders, random Q/K/V, one-step drivers.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kv/kv_cache.h"

namespace og::kvtest {

// n_layers layers, one cache each, with the given windows repeated (0 = flat).
inline KvGeometry simple_geometry(int n_layers, std::vector<int> windows, int n_kv_heads, int dk, int dv) {
  KvGeometry g;
  for (int l = 0; l < n_layers; ++l) {
    g.caches.push_back({n_kv_heads, dk, dv, windows[l % windows.size()]});
    g.layer_cache.push_back(l);
    g.layer_writes.push_back(true);
  }
  return g;
}

// Gemma-3-1B: 26 layers, every 6th global (4 flat), 22 sliding of 512; 1 KV head of 256.
inline KvGeometry gemma3_1b_geometry() {
  KvGeometry g;
  for (int l = 0; l < 26; ++l) {
    g.caches.push_back({1, 256, 256, (l % 6 == 5) ? 0 : 512});
    g.layer_cache.push_back(l);
    g.layer_writes.push_back(true);
  }
  return g;
}

// Deterministic element e of (what 0=q,1=k,2=v) for (seq, pos, layer or cache, head).
inline float val(int what, int seq, int64_t pos, int c, int h, int e) {
  uint32_t x = uint32_t(what * 1000003 + seq * 7919 + pos * 104729 + c * 31337 + h * 613 + e * 97);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return float(x % 2001) / 1000.f - 1.f;
}

// The Q (nh heads), K and V (spec's heads) of `rows` for layer l on cache c:
// always the same values for a (seq, pos), so steps can be replayed and compared.
inline void fill_qkv(const std::vector<KvRow>& rows, int l, int c, const KvCacheSpec& s, int nh,
                     std::vector<float>* q, std::vector<float>* k, std::vector<float>* v) {
  for (const KvRow& row : rows) {
    for (int h = 0; h < nh; ++h)
      for (int e = 0; e < s.head_dim_k; ++e) q->push_back(val(0, row.seq, row.pos, l, h, e));
    for (int h = 0; h < s.n_kv_heads; ++h) {
      for (int e = 0; e < s.head_dim_k; ++e) k->push_back(val(1, row.seq, row.pos, c, h, e));
      for (int e = 0; e < s.head_dim_v; ++e) v->push_back(val(2, row.seq, row.pos, c, h, e));
    }
  }
}

inline std::vector<float> random_vec(std::mt19937& rng, size_t n, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace og::kvtest
