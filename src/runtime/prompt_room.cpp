// The prompt's room (prompt_room.h).
#include "runtime/prompt_room.h"

namespace og {

bool prompt_leaves_room(int64_t history, int64_t prompt, int64_t capacity) {
  return history >= 0 && prompt >= 0 && history <= capacity && prompt < capacity - history;
}

std::string prompt_room_error(int64_t history, int64_t prompt, int64_t capacity) {
  if (prompt_leaves_room(history, prompt, capacity)) return "";
  std::string m = "the prompt of " + std::to_string(prompt) + " tokens does not fit";
  if (history > 0) m += " after " + std::to_string(history) + " tokens of history";
  return m + ": a session of " + std::to_string(capacity) + " positions holds " +
         (history > 0 ? "them" : "the prompt") + " and at least one generated token";
}

}  // namespace og
