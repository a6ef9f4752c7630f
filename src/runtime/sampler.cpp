// Sampler and its PRNG: repeat, presence and frequency penalties, temperature,
// top-k, top-p, min-p.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"

namespace og {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

int32_t argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  return best;
}

}  // namespace

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

// These are not the user's bounds: a setting's range and the message for
// one outside it are runtime/generation_limits.h's, checked at every edge
// (server, commands, C API and so Python) before a sampler is made. Here only
// what the maths needs holds: finite numbers (a NaN or an infinity poisons
// every logit), a temperature and counts that are not negative, and a
// positive repeat penalty (logits are divided by it). Anything else samples
// well: tests and the draft model may go past the user's bounds (temperature
// 5 or 8), a top_p of 0 or less keeps the most likely token, above 1 keeps
// all, and a min_p above 1 counts as 1 (the most likely tokens only).
Sampler::Sampler(const SamplerConfig& config) : config_(config), rng_(config.seed) {
  const char* kWhy = " (an internal invariant; user settings are checked at the edge)";
  OG_CHECK(config.temperature >= 0 && std::isfinite(config.temperature), "sampler: temperature must be finite and >= 0",
           kWhy);
  OG_CHECK(config.top_k >= 0, "sampler: top_k must be >= 0", kWhy);
  OG_CHECK(std::isfinite(config.top_p), "sampler: top_p must be finite", kWhy);
  OG_CHECK(config.min_p >= 0 && std::isfinite(config.min_p), "sampler: min_p must be finite and >= 0", kWhy);
  OG_CHECK(config.repeat_penalty > 0 && std::isfinite(config.repeat_penalty),
           "sampler: repeat_penalty must be finite and > 0", kWhy);
  OG_CHECK(config.repeat_last_n >= 0, "sampler: repeat_last_n must be >= 0", kWhy);
  OG_CHECK(std::isfinite(config.presence_penalty), "sampler: presence_penalty must be finite", kWhy);
  OG_CHECK(std::isfinite(config.frequency_penalty), "sampler: frequency_penalty must be finite", kWhy);
  for (const auto& [t, b] : config.logit_bias)
    OG_CHECK(std::isfinite(b), "sampler: logit_bias of ", t, " must be finite", kWhy);
}

void Sampler::apply_logit_bias(std::vector<float>& logits) const {
  for (const auto& [t, b] : config_.logit_bias)
    if (t >= 0 && static_cast<size_t>(t) < logits.size()) logits[static_cast<size_t>(t)] += b;
}

void Sampler::apply_repeat_penalty(std::vector<float>& logits, std::span<const int32_t> recent) const {
  if (config_.repeat_penalty == 1.0 || config_.repeat_last_n == 0) return;
  const size_t n = std::min(recent.size(), static_cast<size_t>(config_.repeat_last_n));
  std::unordered_set<int32_t> seen;
  const float pen = static_cast<float>(config_.repeat_penalty);
  for (size_t i = recent.size() - n; i < recent.size(); ++i) {
    const int32_t t = recent[i];
    if (t < 0 || static_cast<size_t>(t) >= logits.size() || !seen.insert(t).second) continue;
    logits[t] = logits[t] > 0 ? logits[t] / pen : logits[t] * pen;
  }
}

void Sampler::apply_additive_penalties(std::vector<float>& logits, std::span<const int32_t> generated) const {
  if (config_.presence_penalty == 0.0 && config_.frequency_penalty == 0.0) return;
  std::unordered_map<int32_t, int64_t> count;
  for (int32_t t : generated)
    if (t >= 0 && static_cast<size_t>(t) < logits.size()) ++count[t];
  for (const auto& [t, c] : count)
    logits[t] -= static_cast<float>(config_.presence_penalty + config_.frequency_penalty * static_cast<double>(c));
}

bool Sampler::penalised(std::span<const int32_t> recent, std::span<const int32_t> generated) const {
  const bool repeat = config_.repeat_penalty != 1.0 && config_.repeat_last_n > 0 && !recent.empty();
  const bool additive = (config_.presence_penalty != 0.0 || config_.frequency_penalty != 0.0) && !generated.empty();
  return repeat || additive || !config_.logit_bias.empty();
}

std::vector<std::pair<int32_t, double>> Sampler::distribution(std::span<const float> logits,
                                                              std::span<const int32_t> recent,
                                                              std::span<const int32_t> generated) const {
  return candidates(logits, recent, generated, /*sorted=*/true);
}

std::vector<std::pair<int32_t, double>> Sampler::candidates(std::span<const float> logits_in,
                                                            std::span<const int32_t> recent,
                                                            std::span<const int32_t> generated, bool sorted) const {
  OG_CHECK(!logits_in.empty(), "sampler: empty logits");
  std::vector<float> logits(logits_in.begin(), logits_in.end());
  apply_logit_bias(logits);
  apply_repeat_penalty(logits, recent);
  apply_additive_penalties(logits, generated);
  if (config_.temperature == 0.0) return {{argmax(logits), 1.0}};

  std::vector<std::pair<int32_t, double>> cand;
  cand.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i]) || logits[i] == -INFINITY) continue;
    cand.emplace_back(static_cast<int32_t>(i), static_cast<double>(logits[i]) / config_.temperature);
  }
  if (cand.empty()) return {{argmax(logits), 1.0}};
  auto by_value = [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); };
  bool is_sorted = false;
  if (config_.top_k > 0 && static_cast<size_t>(config_.top_k) < cand.size()) {
    std::nth_element(cand.begin(), cand.begin() + config_.top_k - 1, cand.end(), by_value);
    cand.resize(config_.top_k);
  }
  if (config_.top_p < 1.0) {  // the cumulative cut needs the order
    std::sort(cand.begin(), cand.end(), by_value);
    is_sorted = true;
  }
  double mx = cand[0].second;
  for (const auto& c : cand) mx = std::max(mx, c.second);
  double sum = 0;
  for (auto& c : cand) sum += (c.second = std::exp(c.second - mx));
  for (auto& c : cand) c.second /= sum;
  if (config_.top_p < 1.0) {
    double acc = 0;
    size_t keep = cand.size();
    for (size_t i = 0; i < cand.size(); ++i) {
      acc += cand[i].second;
      if (acc >= config_.top_p) { keep = i + 1; break; }
    }
    cand.resize(keep);
  }
  if (config_.min_p > 0) {
    double p_max = 0;
    for (const auto& c : cand) p_max = std::max(p_max, c.second);
    const double floor_p = std::min(config_.min_p, 1.0) * p_max;  // the most likely token always stays
    cand.erase(std::remove_if(cand.begin(), cand.end(), [&](const auto& c) { return c.second < floor_p; }),
               cand.end());
  }
  sum = 0;
  for (auto& c : cand) sum += c.second;
  for (auto& c : cand) c.second /= sum;
  if (sorted && !is_sorted) std::sort(cand.begin(), cand.end(), by_value);
  return cand;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent,
                        std::span<const int32_t> generated) {
  if (config_.temperature == 0.0 && !penalised(recent, generated)) {  // plain greedy: no copy
    OG_CHECK(!logits.empty(), "sampler: empty logits");
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  const auto cand = candidates(logits, recent, generated, /*sorted=*/false);
  if (cand.size() == 1) return cand[0].first;
  const double u = rng_.next_double();
  double acc = 0;
  for (const auto& c : cand) {
    acc += c.second;
    if (u < acc) return c.first;
  }
  return cand.back().first;  // rounding left u just above the total
}

}  // namespace og
