// TokenVocab: a vocabulary's token bytes and their preorder trie (trie.h).
#include <algorithm>
#include <atomic>
#include <bit>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/trie.h"

namespace og::grammar {

namespace {

// Subtrees with fewer tokens than this are walked, not checked in bulk.
constexpr uint32_t kMinBulkTokens = 4;

std::atomic<uint64_t> g_next_uid{1};

// The length of the UTF-8 character at t[j] when it is valid and complete;
// 0 when it is a valid character cut short by the end of t; -1 when invalid.
int utf8_char(std::string_view t, size_t j) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(t[k]); };
  const uint8_t c = at(j);
  int len;
  uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k < len; ++k) {
    if (j + k >= t.size()) return 0;
    const uint8_t b = at(j + k);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return -1;
  }
  return len;
}

// valid[j] = t[j..] is valid UTF-8, its last character possibly cut short.
void valid_from(std::string_view t, std::vector<uint8_t>& valid) {
  valid.assign(t.size() + 1, 0);
  valid[t.size()] = 1;
  for (size_t j = t.size(); j-- > 0;) {
    const int n = utf8_char(t, j);
    valid[j] = n == 0 || (n > 0 && valid[j + static_cast<size_t>(n)]);
  }
}

// Builds the trie from token ids sorted by their bytes: consecutive tokens
// share their common prefix's nodes, so nodes come out in preorder; a node is
// closed (its skip and subtree byte set fixed) when a token leaves its prefix.
class TrieBuilder {
 public:
  TrieBuilder(const TokenVocab& vocab, detail::Trie& trie) : vocab_(vocab), t_(trie) {}

  void add(int32_t id) {
    const std::string_view bytes = vocab_.bytes(id);
    if (bytes.size() > UINT16_MAX) fail("grammar: token ", id, " is ", bytes.size(), " bytes long (at most 65535)");
    size_t lcp = 0;
    while (lcp < prev_.size() && lcp < bytes.size() && prev_[lcp] == bytes[lcp]) ++lcp;
    while (path_.size() > lcp) close_last();
    for (size_t d = lcp; d < bytes.size(); ++d) {
      detail::TrieNode n{};
      n.tok_begin = static_cast<uint32_t>(t_.order.size());
      n.depth = static_cast<uint16_t>(d + 1);
      n.byte = static_cast<uint8_t>(bytes[d]);
      path_.push_back(static_cast<uint32_t>(t_.nodes.size()));
      t_.nodes.push_back(n);
      t_.sub.push_back(-1);
      utf8_ok_.push_back(1);
      if (acc_.size() <= d + 1) acc_.resize(d + 2);
      acc_[d + 1] = detail::Bits256{};
    }
    // Whether the bytes after each node on the path are valid UTF-8.
    valid_from(bytes, valid_);
    for (size_t d = 0; d < bytes.size(); ++d) utf8_ok_[path_[d]] &= valid_[d + 1];
    detail::TrieNode& last = t_.nodes[path_.back()];
    if (last.n_own == UINT8_MAX) fail("grammar: more than 255 tokens spell the same bytes as token ", id);
    ++last.n_own;
    t_.order.push_back(id);
    t_.max_depth = std::max<int32_t>(t_.max_depth, static_cast<int32_t>(bytes.size()));
    prev_ = bytes;
  }

  void finish() {
    while (!path_.empty()) close_last();
  }

 private:
  void close_last() {
    const uint32_t i = path_.back();
    path_.pop_back();
    detail::TrieNode& n = t_.nodes[i];
    n.skip = static_cast<uint32_t>(t_.nodes.size());
    const detail::Bits256& below = acc_[n.depth];
    if (static_cast<uint32_t>(t_.order.size()) - n.tok_begin >= kMinBulkTokens) {
      // Bytes >= 0x80 only ever loop as whole characters: one marker says
      // whether those below are valid UTF-8 (kValidUtf8) or not (kBadUtf8).
      detail::Bits256 sub = below;
      const bool non_ascii = (sub[2] | sub[3]) != 0;
      sub[2] = sub[3] = 0;
      if (non_ascii) detail::bits_set(sub, utf8_ok_[i] ? detail::kValidUtf8 : detail::kBadUtf8);
      t_.sub[i] = static_cast<int32_t>(t_.sub_bytes.size());
      t_.sub_bytes.push_back(sub);
    }
    detail::Bits256& up = acc_[n.depth - 1];
    for (int w = 0; w < 4; ++w) up[w] |= below[w];
    detail::bits_set(up, n.byte);
  }

  const TokenVocab& vocab_;
  detail::Trie& t_;
  std::vector<uint32_t> path_;           // open nodes, by depth
  std::vector<detail::Bits256> acc_;     // [depth]: bytes seen below the open node at that depth
  std::string_view prev_;
  std::vector<uint8_t> utf8_ok_;  // per node: every token's bytes below it are valid UTF-8
  std::vector<uint8_t> valid_;
};

}  // namespace

TokenVocab::TokenVocab(const std::vector<std::string>& tokens, const std::vector<bool>& allowed)
    : trie_(std::make_unique<detail::Trie>()), uid_(g_next_uid++) {
  if (!allowed.empty() && allowed.size() != tokens.size()) {
    fail("grammar: the vocabulary has ", tokens.size(), " tokens but ", allowed.size(), " allowed flags");
  }
  if (tokens.size() >= static_cast<size_t>(INT32_MAX)) fail("grammar: the vocabulary is too large");
  offsets_.reserve(tokens.size() + 1);
  offsets_.push_back(0);
  for (const std::string& t : tokens) {
    if (bytes_.size() + t.size() > UINT32_MAX) fail("grammar: the vocabulary's bytes exceed 4 GiB");
    bytes_ += t;
    offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  }
  detail::Trie& trie = *trie_;
  const int32_t n = n_vocab();
  trie.in_trie.assign(static_cast<size_t>(n), 0);
  trie.base.assign((static_cast<size_t>(n) + 63) / 64, 0);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < n; ++id) {
    if ((allowed.empty() || allowed[id]) && !bytes(id).empty()) {
      ids.push_back(id);
      trie.in_trie[id] = 1;
      trie.base[id >> 6] |= uint64_t{1} << (id & 63);
    }
  }
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    const std::string_view x = bytes(a), y = bytes(b);
    return x != y ? x < y : a < b;
  });
  TrieBuilder builder(*this, trie);
  for (int32_t id : ids) builder.add(id);
  builder.finish();
}

TokenVocab::~TokenVocab() = default;

std::string_view TokenVocab::bytes(int32_t id) const {
  if (id < 0 || id >= n_vocab()) fail("grammar: token id ", id, " is outside the vocabulary (", n_vocab(), " tokens)");
  return std::string_view(bytes_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

bool TokenVocab::in_trie(int32_t id) const { return id >= 0 && id < n_vocab() && trie_->in_trie[id]; }

size_t TokenVocab::n_trie_nodes() const { return trie_->nodes.size(); }

int32_t TokenMask::count() const {
  int32_t n = 0;
  for (uint64_t w : bits) {  // without -mpopcnt std::popcount is a library call
    w = w - ((w >> 1) & 0x5555555555555555ULL);
    w = (w & 0x3333333333333333ULL) + ((w >> 2) & 0x3333333333333333ULL);
    w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    n += static_cast<int32_t>((w * 0x0101010101010101ULL) >> 56);
  }
  return n;
}

std::vector<int32_t> TokenMask::ids() const {
  std::vector<int32_t> out;
  for (size_t w = 0; w < bits.size(); ++w) {
    for (uint64_t x = bits[w]; x; x &= x - 1) out.push_back(static_cast<int32_t>(w * 64 + std::countr_zero(x)));
  }
  return out;
}

}  // namespace og::grammar
