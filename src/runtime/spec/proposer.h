// Speculative decoding's proposer interface: something that guesses the next
// few tokens of a sequence cheaply (prompt lookup, a small draft model, later a
// model's own multi-token heads such as EAGLE or MTP). The verifier
// (Session's verify step, runtime/spec/spec_step.cpp) knows only this
// interface: it forwards the last token plus the draft through the target in
// one batch and keeps the longest prefix the target agrees with, so a
// proposer can never change the output, only how many forwards it takes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace og {

// A token distribution as (token, probability), probabilities summing to 1.
using TokenDist = std::vector<std::pair<int32_t, double>>;

struct Draft {
  std::vector<int32_t> tokens;
  // The proposer's distribution for each draft token, which it drew the token
  // from; empty (or an empty entry) means a point mass at the token (a
  // deterministic guess: prompt lookup, a greedy draft model). Only sampled
  // verification reads it (the rejection rule needs q).
  std::vector<TokenDist> q;
};

class SpecProposer {
 public:
  virtual ~SpecProposer() = default;
  // Up to max_tokens tokens that may follow `history` (the whole sequence so
  // far: the prompt and every token generated, the last one included).
  // Fewer (or none) when it has no good guess. Throws og::Error on failure.
  virtual Draft propose(std::span<const int32_t> history, int64_t max_tokens) = 0;
  // After the target verified a draft: how many of its tokens it accepted.
  virtual void verified(int64_t proposed, int64_t accepted) { (void)proposed, (void)accepted; }
  virtual std::string name() const = 0;  // "ngram", "draft", ... for reports
};

// A turn's speculation (GenerateOptions::spec). proposer null: plain decode.
struct SpecOptions {
  SpecProposer* proposer = nullptr;
  int64_t draft_max = 16;  // most draft tokens per verify step (also bounded by the cache's max_write - 1)
  int64_t draft_min = 0;   // a shorter draft is not verified (a plain decode step instead)
};

}  // namespace og
