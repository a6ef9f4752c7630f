#include "runtime/generation_limits.h"

#include <charconv>
#include <cmath>

namespace og {

namespace {

// Shortest text that reads back as x ("3", "0.5", "1e+30", "nan").
std::string number_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

class Checker {
 public:
  explicit Checker(std::vector<LimitViolation>* out) : out_(out) {}

  // lo_open: lo itself is outside.
  void real(LimitField f, const std::optional<double>& v, double lo, double hi, bool lo_open = false) {
    if (!v) return;
    const double x = *v;
    if (std::isfinite(x) && x >= lo && x <= hi && !(lo_open && x == lo)) return;
    add(f, "is " + number_text(x) + ", outside " + (lo_open ? "(" : "[") + number_text(lo) + ", " +
               number_text(hi) + "]");
  }

  void integer(LimitField f, const std::optional<int64_t>& v, int64_t lo, int64_t hi) {
    if (!v || (*v >= lo && *v <= hi)) return;
    add(f, "is " + std::to_string(*v) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }

  void add(LimitField f, std::string message, int64_t index = -1) {
    out_->push_back(LimitViolation{f, index, std::move(message)});
  }

 private:
  std::vector<LimitViolation>* out_;
};

}  // namespace

std::vector<LimitViolation> check_generation_settings(const GenerationSettings& s) {
  using namespace limits;
  std::vector<LimitViolation> out;
  Checker c(&out);
  c.real(LimitField::kTemperature, s.temperature, 0, kTemperatureMax);
  c.real(LimitField::kTopP, s.top_p, 0, kTopPMax, /*lo_open=*/true);
  c.real(LimitField::kMinP, s.min_p, 0, kMinPMax);
  c.real(LimitField::kRepeatPenalty, s.repeat_penalty, 0, kRepeatPenaltyMax, /*lo_open=*/true);
  c.real(LimitField::kPresencePenalty, s.presence_penalty, -kAdditivePenaltyMax, kAdditivePenaltyMax);
  c.real(LimitField::kFrequencyPenalty, s.frequency_penalty, -kAdditivePenaltyMax, kAdditivePenaltyMax);
  c.integer(LimitField::kTopK, s.top_k, -1, kTopKMax);
  c.integer(LimitField::kRepeatLastN, s.repeat_last_n, 0, kRepeatLastNMax);
  c.integer(LimitField::kMaxTokens, s.max_tokens, 0, kMaxTokensMax);
  c.integer(LimitField::kN, s.n, 1, kNMax);
  c.integer(LimitField::kTopLogprobs, s.top_logprobs, 0, kTopLogprobsMax);
  c.integer(LimitField::kMaxReasoningTokens, s.max_reasoning_tokens, 0, kMaxReasoningTokensMax);
  if (s.logit_bias.size() > kLogitBiasEntries)
    c.add(LimitField::kLogitBias, "has " + std::to_string(s.logit_bias.size()) + " entries; at most " +
                                      std::to_string(kLogitBiasEntries));
  // Its token ids are checked against the vocabulary where the model is known
  // (runtime/token_ids.h: one message for a bad id, a negative one included).
  for (const auto& [id, bias] : s.logit_bias) {
    if (!std::isfinite(bias) || bias < -kLogitBiasMax || bias > kLogitBiasMax)
      c.add(LimitField::kLogitBias,
            "is " + number_text(bias) + ", outside [" + number_text(-kLogitBiasMax) + ", " +
                number_text(kLogitBiasMax) + "]",
            id);
  }
  if (s.stop.size() > kStopStrings)
    c.add(LimitField::kStop,
          "has " + std::to_string(s.stop.size()) + " strings; at most " + std::to_string(kStopStrings));
  for (size_t i = 0; i < s.stop.size(); ++i)
    if (s.stop[i].empty()) c.add(LimitField::kStop, "is empty", static_cast<int64_t>(i));
  return out;
}

const char* limit_field_name(LimitField f) {
  switch (f) {
    case LimitField::kTemperature: return "temperature";
    case LimitField::kTopP: return "top_p";
    case LimitField::kMinP: return "min_p";
    case LimitField::kRepeatPenalty: return "repetition_penalty";
    case LimitField::kPresencePenalty: return "presence_penalty";
    case LimitField::kFrequencyPenalty: return "frequency_penalty";
    case LimitField::kTopK: return "top_k";
    case LimitField::kRepeatLastN: return "repeat_last_n";
    case LimitField::kMaxTokens: return "max_tokens";
    case LimitField::kN: return "n";
    case LimitField::kTopLogprobs: return "top_logprobs";
    case LimitField::kMaxReasoningTokens: return "max_reasoning_tokens";
    case LimitField::kLogitBias: return "logit_bias";
    case LimitField::kStop: return "stop";
  }
  return "?";
}

std::string describe_violation(const LimitViolation& v, const std::string& name) { return name + " " + v.message; }

}  // namespace og
