// Grammar-constrained sampling: one turn's sampled tokens kept inside a
// grammar (src/grammar), for structured output (a JSON schema, a GBNF
// grammar, a required tool call).
//
// Each step samples unconstrained first and checks the sampled token against
// the matcher (one token's bytes); only a rejected token pays for the full
// mask (fill_mask over the vocabulary's trie) and a draw from the masked
// logits. Drawing from p, keeping an allowed token and otherwise drawing from
// p restricted to the allowed set gives exactly p restricted to the allowed
// set, so the result is the masked distribution either way.
//
// Control tokens are never produced under a grammar, except the turn's stop
// ids, which are allowed exactly when the grammar is complete; once nothing
// can follow (complete and no byte may continue), a stop id is the only
// choice. A grammar that allows nothing at all (not complete, no token fits)
// ends the turn on a stop id too (GrammarState::dead_end says so).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

namespace og {

// The vocabulary as the grammar sees it: token_bytes() of every id, control,
// unused and unknown tokens left out (their text is not their bytes). Build it once per tokenizer and share it (a
// 128k vocabulary's trie takes a moment); it is immutable, so thread-safe.
std::shared_ptr<const grammar::TokenVocab> grammar_vocab(const Tokenizer& tok);

// The same, with the control tokens whose text is one of `admitted` allowed as
// that text: the markers of a tool-call format that are control tokens
// (Mistral's [TOOL_CALLS] and [ARGS]), so that a grammar of calls in that
// format can produce them. The reply must then be decoded with control tokens'
// texts (GenerateOptions::special_text) for the grammar's count of bytes to
// match the reply's.
std::shared_ptr<const grammar::TokenVocab> grammar_vocab(const Tokenizer& tok, std::span<const std::string> admitted);

// Whether any of `texts` is a control token of tok (then grammar_vocab(tok,
// texts) differs from grammar_vocab(tok)).
bool has_control_token(const Tokenizer& tok, std::span<const std::string> texts);

// The reasoning block a grammar admits before its constrained part (a think
// block, Mistral's [THINK], Gemma 4's thought channel, harmony's analysis
// message): the tokens inside it are counted, and once max_tokens of them are
// spent the close marker is forced, token by token (the longest vocabulary
// entry that spells the marker's next bytes and the grammar allows), so the
// constrained part begins. The markers are the reply's text: the grammar
// decides where the block may stand, this only counts and closes it.
struct ReasoningLimit {
  std::string open;          // the opener a reply may begin with ("" when only starts_open)
  std::string close;         // the text that ends the block ("" = no block: nothing counted)
  bool starts_open = false;  // the prompt opened the block: the reply begins inside it
  int64_t max_tokens = -1;   // tokens inside the block before close is forced; < 0 = no limit
};

// A grammar for one request: the compiled grammar and the vocabulary index.
struct GrammarConstraint {
  std::shared_ptr<const grammar::Grammar> grammar;
  std::shared_ptr<const grammar::TokenVocab> vocab;
  ReasoningLimit reasoning = {};  // no block by default
};

// One turn's matcher.
class GrammarState {
 public:
  explicit GrammarState(const GrammarConstraint& c);

  // A token for these logits that the grammar allows; stop_ids end the turn
  // (allowed when complete). The sampled token is accepted into the matcher.
  int32_t sample(Sampler& sampler, std::span<const float> logits, std::span<const int32_t> recent,
                 std::span<const int32_t> generated, std::span<const int32_t> stop_ids);
  bool complete() const { return matcher_.is_complete(); }
  bool dead_end() const { return dead_end_; }
  int64_t masked_steps() const { return masked_steps_; }  // steps that needed the full mask
  int64_t reasoning_tokens() const { return reasoning_tokens_; }  // sampled inside the reasoning block
  bool reasoning_forced() const { return reasoning_forced_; }     // its budget ran out and close was forced

 private:
  enum class Block { kBefore, kOpen, kDone };  // where the reply stands against c_.reasoning
  int32_t sample_allowed(Sampler& sampler, std::span<const float> logits, std::span<const int32_t> recent,
                         std::span<const int32_t> generated, std::span<const int32_t> stop_ids);
  int32_t forced_close_token() const;  // -1 when no allowed token spells the marker's next bytes
  void track(int32_t id);

  GrammarConstraint c_;
  Block block_ = Block::kDone;
  std::string seen_;  // kBefore: the reply so far; kOpen: its last bytes (a close marker in the making)
  int64_t reasoning_tokens_ = 0;
  bool reasoning_forced_ = false;
  grammar::Matcher matcher_;
  grammar::TokenMask mask_;
  std::vector<float> masked_;
  bool dead_end_ = false;
  int64_t masked_steps_ = 0;
};

}  // namespace og
