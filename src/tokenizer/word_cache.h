// A thread-safe cache of encoded words (raw word bytes -> ids) shared by the
// BPE and SentencePiece models; it is dropped whole when it grows too large.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace og::tok {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;

  // Appends the cached ids of `word` to out; false when absent.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(word);
    if (it == map_.end()) return false;
    const int32_t* p = ids_.data() + it->second.offset;
    out.insert(out.end(), p, p + it->second.count);
    return true;
  }
  void insert(std::string_view word, const int32_t* ids, size_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (ids_.size() > kMaxIds) {
      map_.clear();
      ids_.clear();
    }
    const Entry e{static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(n)};
    ids_.insert(ids_.end(), ids, ids + n);
    map_.emplace(std::string(word), e);
  }

 private:
  static constexpr size_t kMaxIds = 1u << 22;
  struct Entry {
    uint32_t offset, count;
  };
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, Entry, StringHash, std::equal_to<>> map_;
  mutable std::vector<int32_t> ids_;
};

}  // namespace og::tok
