// A chat turn's prompt over a session's history (runtime/chat_turn.h).
#include "runtime/chat_turn.h"

#include <algorithm>

namespace og {

int64_t shared_prompt_prefix(std::span<const int32_t> history, std::span<const ImageSpan> history_images,
                             std::span<const int32_t> prompt, std::span<const ImageSpan> prompt_images) {
  size_t n = 0;
  while (n < history.size() && n < prompt.size() && history[n] == prompt[n]) ++n;
  if (!prompt.empty() && n == prompt.size()) --n;  // the last prompt token is forwarded again for its logits
  return common_image_prefix(static_cast<int64_t>(n), history_images, prompt_images);
}

ChatTurnPrompt plan_chat_turn(const ChatRequest& r, const ChatSetup& setup, const Tokenizer& tok, const Session& s) {
  ChatTurnPrompt p;
  p.plan = plan_chat(r, setup);
  p.ids = encode_chat(tok, p.plan.segments, true);
  const std::vector<ImageSpan> images = s.image_spans();
  p.keep = shared_prompt_prefix(s.history(), images, p.ids);
  return p;
}

RewindResult keep_shared_prefix(Session& s, const ChatTurnPrompt& p) {
  if (p.keep >= s.position()) return RewindResult{};
  return s.rewind_to(p.keep);
}

}  // namespace og
