// libFuzzer target: chat-template rendering of arbitrary message contents.
// Input: byte 0 picks a built-in template, byte 1 holds flags (a system
// message, add_generation_prompt), the rest is split at NUL bytes into
// message contents (user and assistant alternating). Every render (each
// earlier turn's prompt too) and encoding must succeed or throw og::Error,
// and no content may add a turn-end token: the stop ids in the encoding
// are those of the same conversation with every content replaced by "x".
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "chat/chat_template.h"

namespace {

// A vocabulary with the chat markers of several formats as single tokens
// (Llama 3's); absent test data leaves the encoding checks out.
const og::Tokenizer* marker_tokenizer() {
  static const std::unique_ptr<og::Tokenizer> tok = []() -> std::unique_ptr<og::Tokenizer> {
    const std::string path = std::string(OG_TESTDATA_DIR) + "/vocab/llama3.2-bpe/tokenizer.json";
    if (!og::file_exists(path)) return nullptr;
    return og::Tokenizer::from_path(path);
  }();
  return tok.get();
}

void check_segments(const og::ChatSegments& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].text.empty()) __builtin_trap();
    if (i > 0 && s[i].is_template == s[i - 1].is_template) __builtin_trap();
  }
}

size_t count_stops(const std::vector<int32_t>& ids, const std::vector<int32_t>& stops) {
  return std::count_if(ids.begin(), ids.end(),
                       [&](int32_t id) { return std::binary_search(stops.begin(), stops.end(), id); });
}

void run(const og::ChatFormat& t, const std::vector<og::ChatMessage>& msgs, uint8_t flags) {
  const bool gen = flags & 2;
  const og::ChatSegments full = t.render_segments(msgs, gen);
  check_segments(full);
  // Each earlier turn's prompt, as a chat rendered it before (a chat renders
  // the whole conversation every turn, runtime/chat_turn.h).
  for (size_t n = 1; n < msgs.size(); ++n)
    if (msgs[n].role == "assistant") {
      try {
        check_segments(t.render_segments(std::span(msgs).first(n), true));
      } catch (const og::Error&) {
      }
    }
  const og::Tokenizer* tok = marker_tokenizer();
  if (tok == nullptr) return;
  std::vector<og::ChatMessage> plain = msgs;
  for (og::ChatMessage& m : plain) m.content = "x";
  const std::vector<int32_t> stops = og::chat_stop_ids(t, *tok);
  const std::vector<int32_t> ids = og::encode_chat(*tok, full, true);
  const std::vector<int32_t> plain_ids = og::encode_chat(*tok, t.render_segments(plain, gen), true);
  if (count_stops(ids, stops) != count_stops(plain_ids, stops)) __builtin_trap();  // a content made a stop token
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const std::vector<std::string> names = og::chat_template_names();
  const std::string& name = names[data[0] % names.size()];
  const uint8_t flags = data[1];
  std::vector<og::ChatMessage> msgs;
  if (flags & 1) msgs.push_back({"system", ""});
  std::string cur;
  auto flush = [&] {
    const bool user = msgs.empty() || msgs.back().role != "user";
    msgs.push_back({user ? "user" : "assistant", cur});
    cur.clear();
  };
  for (size_t i = 2; i < size && msgs.size() < 9; ++i) {
    if (data[i] == 0) flush();
    else cur.push_back(static_cast<char>(data[i]));
  }
  if (msgs.size() < 9) flush();
  if (flags & 1) msgs[0].content = msgs.size() > 1 ? msgs[1].content : "";
  const std::string whole(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    (void)og::detect_chat_template(whole);
    (void)og::make_chat_template("auto", whole);
  } catch (const og::Error&) {
  }
  try {
    run(*og::make_chat_template(name, std::nullopt), msgs, flags);
  } catch (const og::Error&) {
  }
  return 0;
}
