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

inline std::vector<float> random_vec(std::mt19937& rng, size_t n, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace og::kvtest
