// The one home of the bounds on sampler settings and generation limits, and of
// the engine's default sizes. Every edge (the server's JSON parser, Ollama's
// options, the command-line flags, the C API and so Python) reads its values
// into GenerationSettings and calls check_generation_settings(), so the same
// bad value meets the same bound and the same message everywhere; each edge
// only names the field its own way ('temperature' in JSON, --temperature on the
// command line, temperature in og_sampler_options).
//
// The bounds are OpenAI's documented ranges where OpenAI has the setting
// (temperature [0, 2], top_p (0, 1], presence/frequency penalty [-2, 2],
// logit_bias [-100, 100], top_logprobs [0, 20]) and vLLM's otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace og {

namespace limits {
inline constexpr double kTemperatureMax = 2.0;  // [0, 2]; 0 = greedy
inline constexpr double kTopPMax = 1.0;         // (0, 1]; 1 = off
inline constexpr double kMinPMax = 1.0;         // [0, 1]; 0 = off
inline constexpr double kRepeatPenaltyMax = 100.0;  // (0, 100]; 1 = off
inline constexpr double kAdditivePenaltyMax = 2.0;  // presence / frequency: [-2, 2]
inline constexpr int64_t kInt32Max = 2147483647;
inline constexpr int64_t kTopKMax = kInt32Max;      // [-1, 2^31 - 1]; 0 and -1 = off
inline constexpr int64_t kRepeatLastNMax = kInt32Max;
inline constexpr int64_t kMaxTokensMax = kInt32Max;  // [0, 2^31 - 1]
inline constexpr int64_t kNMax = kInt32Max;          // [1, 2^31 - 1] (the server's --max-n lowers it)
inline constexpr int64_t kTopLogprobsMax = 20;
inline constexpr int64_t kCompletionLogprobsMax = 5;  // /v1/completions' legacy `logprobs` [0, 5] (OpenAI's)
inline constexpr int64_t kMaxReasoningTokensMax = kInt32Max;
inline constexpr double kLogitBiasMax = 100.0;  // each bias in [-100, 100]
inline constexpr size_t kLogitBiasEntries = 1024;
inline constexpr size_t kStopStrings = 16;
}  // namespace limits

// The engine's default sizes: og_engine_options_init, Python's Engine, the
// scheduler's own SchedulerOptions and the commands' --help read them here.
// The library's values were promised in include/offgraph/offgraph.h (and
// docs/library.md); `offgraph batch` / `serve` promised 8 sequences at once
// (docs/batch.md, docs/serving.md: a server expects many clients), kept as
// kCommandMaxSequences beside them.
namespace engine_defaults {
inline constexpr int32_t kMaxSequences = 4;         // requests decoded at once
inline constexpr int64_t kMaxSessionTokens = 1024;  // prompt + generated tokens of one request
inline constexpr int64_t kStepTokens = 512;         // rows per forward step
inline constexpr int32_t kCommandMaxSequences = 8;  // batch --max-decode-sequences, serve --parallel
}  // namespace engine_defaults

// The settings one generation asks for; an absent value is not checked.
struct GenerationSettings {
  std::optional<double> temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int64_t> top_k, repeat_last_n, max_tokens, n, top_logprobs, max_reasoning_tokens;
  std::vector<std::pair<int64_t, double>> logit_bias;  // (token id, bias)
  std::vector<std::string> stop;
};

enum class LimitField {
  kTemperature,
  kTopP,
  kMinP,
  kRepeatPenalty,
  kPresencePenalty,
  kFrequencyPenalty,
  kTopK,
  kRepeatLastN,
  kMaxTokens,
  kN,
  kTopLogprobs,
  kMaxReasoningTokens,
  kLogitBias,
  kStop,
};

// One mistake: the field (and for logit_bias the token id, for stop the string's
// index, else -1) as data, and what is wrong, worded to follow the field's name
// ("is 3, outside [0, 2]").
struct LimitViolation {
  LimitField field;
  int64_t index = -1;
  std::string message;
};

// Every mistake in s, in field order; empty when s is within its bounds.
std::vector<LimitViolation> check_generation_settings(const GenerationSettings& s);

// The field's name in OpenAI's JSON ("temperature", "repetition_penalty", ...).
const char* limit_field_name(LimitField f);

// "<name> <message>": e.g. describe_violation(v, "'temperature'") gives
// "'temperature' is 3, outside [0, 2]".
std::string describe_violation(const LimitViolation& v, const std::string& name);

}  // namespace og
