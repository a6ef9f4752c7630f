// Sampler: turns one row of logits into a token id. Temperature 0 is greedy
// (argmax, ties to the lowest id) over the biased and penalised logits;
// otherwise the order is logit bias -> repeat penalty -> presence / frequency
// penalty -> temperature ->
// top-k -> softmax -> top-p -> min-p -> draw from our own PRNG, so a given seed
// gives the same tokens on every machine.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace og {

struct SamplerConfig {
  double temperature = 0.0;     // 0 = greedy
  int top_k = 0;                // 0 = off
  double top_p = 1.0;           // 1 = off; keep the smallest set whose mass >= top_p
  double min_p = 0.0;           // 0 = off; drop tokens with p < min_p * p_max
  double repeat_penalty = 1.0;  // 1 = off; applied to tokens in the last repeat_last_n
  int repeat_last_n = 64;
  // OpenAI's additive penalties over the tokens generated so far in this turn
  // (not the prompt): a token generated c times loses
  // presence_penalty * (c > 0) + frequency_penalty * c from its logit. 0 = off;
  // negative values favour repetition.
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  // OpenAI's logit_bias: added to a token's logit before anything else (ids
  // outside the logits are ignored; the server checks them against the
  // vocabulary). -100 bans a token in practice, +100 all but forces it.
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = 0;
};

// A small deterministic generator (splitmix64 seeding + xoshiro256**).
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next_u64();
  double next_double();  // uniform in [0, 1)

 private:
  uint64_t s_[4];
};

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& config);

  // logits: [n_vocab]; recent: the token history (the last repeat_last_n are
  // penalised); generated: the tokens generated so far in this turn (the
  // presence / frequency penalties count these only).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> recent,
                 std::span<const int32_t> generated = {});

  // The candidate set the draw is made from, as (token, probability) sorted by
  // probability descending (ties: lower id first), probabilities summing to 1.
  // For greedy this is the single argmax. Exposed so the filters can be tested.
  std::vector<std::pair<int32_t, double>> distribution(std::span<const float> logits,
                                                       std::span<const int32_t> recent,
                                                       std::span<const int32_t> generated = {}) const;

  const SamplerConfig& config() const { return config_; }
  void reseed(uint64_t seed) { rng_.reseed(seed); }
  // A uniform draw in [0, 1) from this sampler's PRNG (speculative decoding's
  // accept / reject draws, so a seed fixes those too).
  double uniform() { return rng_.next_double(); }

 private:
  void apply_logit_bias(std::vector<float>& logits) const;
  void apply_repeat_penalty(std::vector<float>& logits, std::span<const int32_t> recent) const;
  void apply_additive_penalties(std::vector<float>& logits, std::span<const int32_t> generated) const;
  // Whether any penalty would change these logits (else greedy needs no copy).
  bool penalised(std::span<const int32_t> recent, std::span<const int32_t> generated) const;
  // The candidate set; sorted by probability only when `sorted` (or top-p needed it).
  std::vector<std::pair<int32_t, double>> candidates(std::span<const float> logits, std::span<const int32_t> recent,
                                                     std::span<const int32_t> generated, bool sorted) const;
  SamplerConfig config_;
  Rng rng_;
};

}  // namespace og
