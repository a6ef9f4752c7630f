// A vocabulary's byte strings as a trie in depth-first preorder (internal to
// src/grammar): a walk over the node array visits every prefix once, and a
// rejected node is skipped with its whole subtree by one jump. Token ids are
// listed in the same order, so a subtree's tokens are one contiguous range.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/program.h"

namespace og::grammar::detail {

struct TrieNode {
  uint32_t skip;       // the next node after this one's subtree
  uint32_t tok_begin;  // this node's tokens (n_own of them), then its subtree's, start at order[tok_begin]
  uint16_t depth;      // 1 for a token's first byte
  uint8_t byte;
  uint8_t n_own;       // tokens that end exactly here (identical byte strings)
};

struct Trie {
  std::vector<TrieNode> nodes;  // preorder; the root (empty prefix) is implicit
  std::vector<int32_t> order;   // token ids in preorder
  // Per node: index in sub_bytes of the bytes below it (its own excluded),
  // or -1 for a subtree too small to be worth a bulk check. Bytes < 0x80 as
  // they are; those >= 0x80 as one marker, kValidUtf8 when every token's bytes
  // below the node are valid UTF-8 (the last character possibly cut short),
  // else kBadUtf8.
  std::vector<int32_t> sub;
  std::vector<Bits256> sub_bytes;
  std::vector<uint64_t> base;     // bits of every token in the trie
  std::vector<uint8_t> in_trie;   // [n_vocab]
  int32_t max_depth = 0;

  uint32_t tok_end(uint32_t i) const {
    const uint32_t s = nodes[i].skip;
    return s < nodes.size() ? nodes[s].tok_begin : static_cast<uint32_t>(order.size());
  }
};

}  // namespace og::grammar::detail
