// Score-ordered SentencePiece BPE.
#include "tokenizer/spm_model.h"

#include <queue>

#include "tokenizer/unicode_text.h"

namespace og::tok {

SpmModel::SpmModel(const Vocab& vocab, int32_t unk) : vocab_(vocab), unk_(unk) {
  byte_ids_.fill(-1);
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const int b = parse_byte_piece(vocab.pieces[id]);
    if (b >= 0 && byte_ids_[b] < 0) byte_ids_[b] = id;
  }
}

// Only normal and user-defined pieces can be produced from text: control,
// unknown, unused and byte pieces never match characters.
int32_t SpmModel::find_usable(std::string_view piece) const {
  const int32_t id = vocab_.find(piece);
  if (id < 0) return -1;
  const TokenType t = vocab_.types[id];
  return t == TokenType::kNormal || t == TokenType::kUserDefined ? id : -1;
}

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  struct Sym {
    uint32_t begin, len;
    int32_t prev, next;
  };
  struct Cand {
    float score;
    int32_t left;
    uint32_t len;  // total length when pushed; stale when the symbols changed
    bool operator<(const Cand& o) const { return score != o.score ? score < o.score : left > o.left; }
  };
  thread_local std::vector<Sym> syms;
  syms.clear();
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_unit_len(text, i);
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(n), idx - 1, -1});
    if (idx > 0) syms[idx - 1].next = idx;
    i += n;
  }
  std::priority_queue<Cand> heap;
  auto push = [&](int32_t l) {
    if (l < 0 || syms[l].next < 0) return;
    const Sym& a = syms[l];
    const Sym& b = syms[a.next];
    const int32_t id = find_usable(text.substr(a.begin, a.len + b.len));
    if (id < 0) return;
    const float score = vocab_.scores.empty() ? 0.0f : vocab_.scores[id];
    heap.push({score, l, a.len + b.len});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& a = syms[c.left];
    if (a.len == 0 || a.next < 0) continue;
    Sym& b = syms[a.next];
    if (a.len + b.len != c.len) continue;
    a.len += b.len;
    b.len = 0;
    a.next = b.next;
    if (a.next >= 0) syms[a.next].prev = c.left;
    push(a.prev);
    push(c.left);
  }
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const Sym& s = syms[i];
    const std::string_view piece = text.substr(s.begin, s.len);
    const int32_t id = find_usable(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    bool bytes_ok = true;
    for (char ch : piece) bytes_ok = bytes_ok && byte_ids_[static_cast<uint8_t>(ch)] >= 0;
    if (bytes_ok) {
      for (char ch : piece) out.push_back(byte_ids_[static_cast<uint8_t>(ch)]);
    } else if (unk_ >= 0) {
      out.push_back(unk_);
    }
  }
}

void SpmModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > WordCache::kMaxWordBytes) {
    encode(word, out);
    return;
  }
  if (cache_.lookup(word, out)) return;
  const size_t at = out.size();
  encode(word, out);
  cache_.insert(word, out.data() + at, out.size() - at);
}

}  // namespace og::tok
