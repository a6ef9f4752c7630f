// Log-probabilities of sampled tokens, as the OpenAI API reports them: the
// log-softmax of the model's raw logits (before temperature and filters).
#pragma once

#include <cstdint>
#include <span>

#include "runtime/session.h"

namespace og {

// The event for token `id` drawn from `logits` [n_vocab]: its logprob when
// `logprobs`, and the `top` most likely alternatives (most likely first, ties
// to the lower id) when top > 0.
TokenEvent token_event(std::span<const float> logits, int32_t id, bool logprobs, int top);

}  // namespace og
