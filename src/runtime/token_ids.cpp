#include "runtime/token_ids.h"

namespace og {

namespace {

template <typename T>
std::optional<BadTokenId> first_bad(std::span<const T> ids, int64_t n_vocab) {
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string e = token_id_error(static_cast<int64_t>(ids[i]), n_vocab);
    if (!e.empty()) return BadTokenId{i, std::move(e)};
  }
  return std::nullopt;
}

}  // namespace

std::string token_id_error(int64_t id, int64_t n_vocab) {
  if (id >= 0 && id < n_vocab) return "";
  return "token id " + std::to_string(id) + " is out of range [0, " + std::to_string(n_vocab) + ")";
}

std::optional<BadTokenId> first_bad_token_id(std::span<const int32_t> ids, int64_t n_vocab) {
  return first_bad(ids, n_vocab);
}

std::optional<BadTokenId> first_bad_token_id(std::span<const int64_t> ids, int64_t n_vocab) {
  return first_bad(ids, n_vocab);
}

}  // namespace og
