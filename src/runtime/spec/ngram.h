// Prompt lookup (n-gram) proposer: finds the sequence's last n tokens earlier
// in the sequence (prompt and generated text alike) and proposes what followed
// them there. Free to compute and strong where the reply copies from the
// prompt (summaries, edits, code); n is tried from ngram_max down to
// ngram_min and the most recent earlier match wins.
#pragma once

#include "runtime/spec/proposer.h"

namespace og {

class NgramProposer : public SpecProposer {
 public:
  explicit NgramProposer(int ngram_max, int ngram_min = 1);
  Draft propose(std::span<const int32_t> history, int64_t max_tokens) override;
  std::string name() const override { return "ngram"; }

 private:
  int ngram_max_, ngram_min_;
};

}  // namespace og
