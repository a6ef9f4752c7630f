// Synthetic model fixtures (tools/synth) written once per test process into
// a temp directory, keyed by a name, and helpers to run them.
#pragma once

#include <map>
#include <mutex>

#include "model_test_util.h"
#include "synth/synth.h"

namespace og::test {

// A file (GGUF) or directory (HF) of `spec`, written on first use.
inline std::string synth_path(const synth::SynthSpec& spec, bool hf, const std::string& key) {
  static TempDir dir;
  static std::map<std::string, std::string> made;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const std::string name = key + (hf ? "-hf" : ".gguf");
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  const std::string path = dir.path(name);
  if (hf) synth::write_hf(spec, path);
  else synth::write_gguf(spec, path);
  made[name] = path;
  return path;
}

inline std::string synth_gguf(synth::Family f) {
  return synth_path(synth::tiny_spec(f), false, synth::family_name(f));
}
inline std::string synth_hf(synth::Family f) { return synth_path(synth::tiny_spec(f), true, synth::family_name(f)); }

// Deterministic token ids in [3, n_vocab).
inline std::vector<int32_t> test_tokens(int n, int32_t n_vocab, uint32_t seed = 1) {
  std::vector<int32_t> t;
  uint32_t s = seed * 2654435761u + 12345u;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    t.push_back(3 + static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(n_vocab - 3)));
  }
  return t;
}

// Logits of every row [n, n_vocab] for one sequence fed in chunks of `chunk` rows.
inline std::vector<float> all_logits(const Model& m, KvCache& cache, const std::vector<int32_t>& toks, int chunk,
                                     int seq = 0) {
  std::vector<float> out, logits;
  for (size_t i = 0; i < toks.size(); i += chunk) {
    Batch b;
    for (size_t j = i; j < toks.size() && j < i + chunk; ++j)
      b.rows.push_back({toks[j], seq, static_cast<int64_t>(j), true});
    const KvResult r = m.forward(b, cache, logits);
    if (!r.ok()) throw Error("forward refused: " + r.message);
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

inline const std::vector<synth::Family>& all_families() {
  static const std::vector<synth::Family> f = {synth::Family::kLlama, synth::Family::kQwen2, synth::Family::kQwen3,
                                               synth::Family::kMistral, synth::Family::kGemma3,
                                               synth::Family::kGemma4,  synth::Family::kQwen3Moe,
                                               synth::Family::kMixtral, synth::Family::kPhi3};
  return f;
}

inline std::string family_param_name(synth::Family f) { return synth::family_name(f); }

// Relative logit tolerance between two exact computations of a synthetic
// family. gemma4's ten layers of unscaled attention (scale 1 over RMS-normed
// q and k) and post-norms amplify f32 rounding more than the others.
inline double logit_tol(synth::Family f) { return f == synth::Family::kGemma4 ? 3e-5 : 1e-5; }

}  // namespace og::test
