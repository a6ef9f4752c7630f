// BPE merge loop (rank-ordered, leftmost first on ties) and the word cache.
#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>

#include "base/error.h"
#include "tokenizer/unicode_text.h"

namespace og::tok {

int32_t Vocab::add(std::string piece, TokenType type, float score) {
  const auto id = static_cast<int32_t>(pieces.size());
  index.emplace(piece, id);
  pieces.push_back(std::move(piece));
  types.push_back(type);
  if (!scores.empty() || score != 0.0f) {
    scores.resize(pieces.size() - 1, 0.0f);
    scores.push_back(score);
  }
  return id;
}

void Vocab::check_span(size_t n_ids, size_t n_named, const std::string& source) {
  const size_t holes = n_ids - std::min(n_ids, n_named);
  OG_CHECK(holes <= kMaxHoles || holes <= n_named, source, ": the vocabulary's ids go up to ", n_ids - 1,
           " but only ", std::min(n_ids, n_named), " of them name a token");
}

void Vocab::fill_holes(const std::string& source) {
  size_t named = 0;
  for (const std::string& p : pieces) named += !p.empty();
  check_span(pieces.size(), named, source);
  types.assign(pieces.size(), TokenType::kNormal);
  for (size_t i = 0; i < pieces.size(); ++i)
    if (pieces[i].empty()) {
      pieces[i] = "[UNUSED_" + std::to_string(i) + "]";
      types[i] = TokenType::kUnused;
    }
}

void Vocab::reindex() {
  index.clear();
  index.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) index.emplace(pieces[i], static_cast<int32_t>(i));
}

namespace {

constexpr size_t kSmallWord = 24;

uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

}  // namespace

BpeModel::BpeModel(const Vocab& vocab, const std::vector<std::pair<int32_t, int32_t>>& merges, BpeOptions opt)
    : vocab_(vocab), opt_(opt) {
  byte_ids_.fill(-1);
  if (opt_.byte_level) {
    // Added (control / user-defined) pieces hold raw text, not byte images:
    // they never stand for a byte or a pre-tokenized word.
    auto model_piece = [&](int32_t id) {
      if (id < 0) return false;
      const TokenType t = vocab.types[id];
      return t != TokenType::kControl && t != TokenType::kUserDefined;
    };
    for (int b = 0; b < 256; ++b) {
      std::string p;
      utf8_append(p, byte_to_unicode(static_cast<uint8_t>(b)));
      const int32_t id = vocab.find(p);
      byte_ids_[b] = model_piece(id) ? id : -1;
    }
    std::string raw;
    for (int32_t id = 0; id < vocab.size(); ++id) {
      raw.clear();
      if (model_piece(id) && byte_level_decode(vocab.pieces[id], raw)) raw_index_.emplace(raw, id);
    }
  } else {
    for (int32_t id = 0; id < vocab.size(); ++id) {
      const int b = parse_byte_piece(vocab.pieces[id]);
      if (b >= 0 && byte_ids_[b] < 0) byte_ids_[b] = id;
    }
  }
  size_t cap = 16;
  while (cap < merges.size() * 2) cap <<= 1;
  table_.assign(cap, MergeSlot{});
  mask_ = cap - 1;
  std::string joined;
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto [l, rt] = merges[r];
    if (l < 0 || rt < 0 || l >= vocab.size() || rt >= vocab.size()) continue;
    joined = vocab.pieces[l];
    joined += vocab.pieces[rt];
    const int32_t res = vocab.find(joined);
    if (res < 0) continue;
    const uint64_t key = (static_cast<uint64_t>(l) << 32) | static_cast<uint32_t>(rt);
    for (uint64_t h = mix(key) & mask_;; h = (h + 1) & mask_) {
      if (table_[h].key == key) break;  // a duplicate merge keeps its first rank
      if (table_[h].key == ~0ull) {
        table_[h] = {key, static_cast<uint32_t>(r), res};
        break;
      }
    }
  }
}

std::vector<std::pair<int32_t, int32_t>> BpeModel::merges() const {
  std::vector<const MergeSlot*> used;
  for (const MergeSlot& m : table_)
    if (m.key != ~0ull) used.push_back(&m);
  std::sort(used.begin(), used.end(), [](const MergeSlot* a, const MergeSlot* b) { return a->rank < b->rank; });
  std::vector<std::pair<int32_t, int32_t>> out;
  out.reserve(used.size());
  for (const MergeSlot* m : used)
    out.emplace_back(static_cast<int32_t>(m->key >> 32), static_cast<int32_t>(m->key & 0xffffffffu));
  return out;
}

const BpeModel::MergeSlot* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  for (uint64_t h = mix(key) & mask_;; h = (h + 1) & mask_) {
    const MergeSlot& s = table_[h];
    if (s.key == key) return &s;
    if (s.key == ~0ull) return nullptr;
  }
}

void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& syms) const {
  syms.clear();
  if (opt_.byte_level) {
    for (char c : word) {
      const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
      if (id >= 0) {
        syms.push_back(id);
      } else if (opt_.unk >= 0 && !(opt_.fuse_unk && !syms.empty() && syms.back() == opt_.unk)) {
        syms.push_back(opt_.unk);
      }
    }
    return;
  }
  for (size_t i = 0; i < word.size();) {
    const size_t n = utf8_unit_len(word, i);
    const int32_t id = vocab_.find(word.substr(i, n));
    if (id >= 0) {
      syms.push_back(id);
    } else if (opt_.byte_fallback && std::all_of(word.begin() + i, word.begin() + i + n, [&](char c) {
                 return byte_ids_[static_cast<uint8_t>(c)] >= 0;
               })) {
      for (size_t k = 0; k < n; ++k) syms.push_back(byte_ids_[static_cast<uint8_t>(word[i + k])]);
    } else if (opt_.unk >= 0 && !(opt_.fuse_unk && !syms.empty() && syms.back() == opt_.unk)) {
      syms.push_back(opt_.unk);
    }
    i += n;
  }
}

// Quadratic scan: cheapest for the short words that regex pre-tokenizers produce.
void BpeModel::merge_small(std::vector<int32_t>& syms) const {
  while (syms.size() > 1) {
    uint32_t best_rank = UINT32_MAX;
    size_t best = 0;
    int32_t best_res = -1;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      const MergeSlot* m = find_merge(syms[i], syms[i + 1]);
      if (m && m->rank < best_rank) best_rank = m->rank, best = i, best_res = m->result;
    }
    if (best_res < 0) return;
    syms[best] = best_res;
    syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

// Heap of candidate pairs over a linked list: O(n log n) for long words
// (SentencePiece-style vocabularies encode whole fragments as one word).
void BpeModel::merge_large(std::vector<int32_t>& syms) const {
  struct Cand {
    uint32_t rank;
    int32_t left;  // position of the left symbol
    int32_t lid, rid;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  const auto n = static_cast<int32_t>(syms.size());
  std::vector<int32_t> next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) next[i] = i + 1 < n ? i + 1 : -1, prev[i] = i - 1;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int32_t l) {
    if (l < 0 || next[l] < 0) return;
    const int32_t r = next[l];
    if (const MergeSlot* m = find_merge(syms[l], syms[r])) heap.push({m->rank, l, syms[l], syms[r]});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    if (dead[c.left] || syms[c.left] != c.lid) continue;
    const int32_t r = next[c.left];
    if (r < 0 || syms[r] != c.rid) continue;
    const MergeSlot* m = find_merge(c.lid, c.rid);
    syms[c.left] = m->result;
    dead[r] = true;
    next[c.left] = next[r];
    if (next[r] >= 0) prev[next[r]] = c.left;
    push(prev[c.left]);
    push(c.left);
  }
  size_t w = 0;
  for (int32_t i = 0; i < n; ++i)
    if (!dead[i]) syms[w++] = syms[i];
  syms.resize(w);
}

void BpeModel::encode_uncached(std::string_view word, std::vector<int32_t>& out) const {
  if (opt_.whole_newline_runs && word.find_first_not_of('\n') == std::string_view::npos) {
    const int32_t id = vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (opt_.ignore_merges) {
    const int32_t id = opt_.byte_level ? [&] {
      auto it = raw_index_.find(word);
      return it == raw_index_.end() ? -1 : it->second;
    }() : vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  thread_local std::vector<int32_t> syms;
  initial_symbols(word, syms);
  if (syms.size() <= kSmallWord) {
    merge_small(syms);
  } else {
    merge_large(syms);
  }
  out.insert(out.end(), syms.begin(), syms.end());
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (word.size() > WordCache::kMaxWordBytes) {
    encode_uncached(word, out);
    return;
  }
  if (cache_.lookup(word, out)) return;
  const size_t at = out.size();
  encode_uncached(word, out);
  cache_.insert(word, out.data() + at, out.size() - at);
}

}  // namespace og::tok
