// The one check of token ids a caller gives (a prompt as ids, /detokenize's
// tokens, Ollama's context, the C API's and so Python's ids, `offgraph
// detokenize`): every edge calls it with its own name for the field, so a bad
// id is one message everywhere: "token id 600 is out of range [0, 512)".
// Deeper checks (Scheduler::submit_group, the embedder, the forward pass) are
// invariants behind these edges; the scheduler's and embedder's use the same
// words, so even a front end that skipped its edge gets no second message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace og {

// "" when 0 <= id < n_vocab, else "token id <id> is out of range [0, <n_vocab>)".
std::string token_id_error(int64_t id, int64_t n_vocab);

// The first id of `ids` out of range: its index and token_id_error's message.
struct BadTokenId {
  size_t index;
  std::string message;
};
std::optional<BadTokenId> first_bad_token_id(std::span<const int32_t> ids, int64_t n_vocab);
std::optional<BadTokenId> first_bad_token_id(std::span<const int64_t> ids, int64_t n_vocab);

}  // namespace og
