// The one rule for a prompt's room in a session, and its one message, that
// every edge applies before it generates: the server (OpenAI and Ollama
// routes), the C API (og_session_chat, og_session_generate / stream, and so
// Python) and `offgraph chat` / `run -i`. A prompt must leave room for at
// least one generated token: history + prompt + 1 <= capacity. The
// scheduler reserves a request's positions for prompt + max_new_tokens, so a
// prompt that fills the session has no room for the reply it asks for.
#pragma once

#include <cstdint>
#include <string>

namespace og {

// Whether `prompt` tokens after `history` kept ones leave room for one generated token in `capacity`.
bool prompt_leaves_room(int64_t history, int64_t prompt, int64_t capacity);

// "" when prompt_leaves_room, else the one message:
//   "the prompt of 30 tokens does not fit: a session of 30 positions holds the prompt and at least one generated token"
// ("... does not fit after 8 tokens of history: ..." when history > 0). An
// edge adds only how to raise the capacity.
std::string prompt_room_error(int64_t history, int64_t prompt, int64_t capacity);

}  // namespace og
