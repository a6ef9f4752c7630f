// One home for "render the conversation -> tokens -> what a session
// prefills", used by every front end that keeps a conversation in a session
// (the C API's og_session_chat, `offgraph chat` and `run -i`). Each turn
// renders the WHOLE conversation through plan_chat (the planning the server
// and the library share), encodes it, and keeps the longest prefix of the
// session's history that the new prompt starts with: a turn prefills only
// what it adds. What the template now renders differently from what the
// session holds (a reasoning template that drops an earlier reply's
// <think> block, harmony's final-channel history, Gemma 4's trimmed reply, a
// reply whose text re-encodes to other tokens) is rewound and prefilled
// again, so the cache always holds what a fresh render of the same
// conversation gives.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chat/chat_request.h"
#include "runtime/image_span.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

namespace og {

struct ChatTurnPrompt {
  ChatPlan plan;
  std::vector<int32_t> ids;  // the whole conversation (encode_chat(tok, plan.segments, true))
  // History tokens the prompt shares and keeps; ids[keep, end) are prefilled
  // (at least one token: a turn needs fresh logits).
  int64_t keep = 0;
  std::span<const int32_t> added() const { return std::span<const int32_t>(ids).subspan(static_cast<size_t>(keep)); }
};

// The longest prefix of `history` that `prompt` starts with, less one token
// when it would cover the whole prompt, and never ending inside an image
// (runtime/image_span.h common_image_prefix: an image kept must be at the
// same place, with the same hash, in both).
int64_t shared_prompt_prefix(std::span<const int32_t> history, std::span<const ImageSpan> history_images,
                             std::span<const int32_t> prompt, std::span<const ImageSpan> prompt_images = {});

// Plans `r` (plan_chat: a ChatRequestError naming the field of what it
// refuses), encodes its prompt and finds what `s` keeps of it. Changes nothing.
ChatTurnPrompt plan_chat_turn(const ChatRequest& r, const ChatSetup& setup, const Tokenizer& tok, const Session& s);

// Rewinds `s` to the kept prefix when its history holds more (a no-op
// otherwise); the turn then prefills p.added().
RewindResult keep_shared_prefix(Session& s, const ChatTurnPrompt& p);

}  // namespace og
