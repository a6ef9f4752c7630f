// The reasoning budget of a constrained reply (runtime/constraint.h
// ReasoningLimit): a model that would reason forever is stopped after
// max_tokens tokens inside its block, the close marker is forced (as one token
// when the vocabulary has it, else spelled by the longest pieces), and the
// grammar's constrained part follows; no limit leaves the block alone; a reply
// that does not open the optional block is not counted.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/compose.h"
#include "grammar/grammar.h"
#include "runtime/constraint.h"

namespace og {
namespace {

// Token 0 is the stop id (out of every mask); the model always prefers "hmm ".
struct Toy {
  std::vector<std::string> tokens;
  std::shared_ptr<const grammar::TokenVocab> vocab;
  explicit Toy(std::vector<std::string> t) : tokens(std::move(t)) {
    std::vector<bool> allowed(tokens.size(), true);
    allowed[0] = false;
    vocab = std::make_shared<const grammar::TokenVocab>(tokens, allowed);
  }
  int32_t id(const std::string& text) const {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == text) return static_cast<int32_t>(i);
    return -1;
  }
};

// The reply (token texts) a model that always prefers `favourite` writes under
// the grammar, the limit and at most max_new tokens; *keep: the matcher after it.
std::vector<std::string> reply(const Toy& toy, const std::string& grammar_text, const ReasoningLimit& limit,
                               const std::string& favourite, int max_new,
                               std::unique_ptr<GrammarState>* keep = nullptr) {
  GrammarConstraint c{grammar::Grammar::parse(grammar_text), toy.vocab, limit};
  auto state = std::make_unique<GrammarState>(c);
  Sampler sampler(SamplerConfig{});
  std::vector<float> logits(toy.tokens.size(), 0.0f);
  logits[static_cast<size_t>(toy.id(favourite))] = 10.0f;
  const std::vector<int32_t> stops = {0};
  std::vector<int32_t> generated;
  std::vector<std::string> out;
  for (int i = 0; i < max_new; ++i) {
    const int32_t id = state->sample(sampler, logits, generated, generated, stops);
    if (id == 0) break;
    generated.push_back(id);
    out.push_back(toy.tokens[static_cast<size_t>(id)]);
  }
  if (keep) *keep = std::move(state);
  return out;
}

std::string think_grammar(bool starts_open) {
  std::string g = grammar::text_without_rules("</think>", "think-body");
  g += starts_open ? "root ::= think-body \"</think>\" [\\n]{0,2} answer\n"
                   : "root ::= (\"<think>\" think-body \"</think>\" [\\n]{0,2})? answer\n";
  return g + "answer ::= \"{\" \"}\"\n";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& t : v) s += t;
  return s;
}

TEST(ReasoningBudget, ForcesTheCloseMarkerAfterMaxTokens) {
  const Toy toy({"<eos>", "hmm ", "</think>", "</", "think", ">", "{", "}", "\n", "<think>"});
  ReasoningLimit limit{"<think>", "</think>", true, 5};
  std::unique_ptr<GrammarState> st;
  const std::vector<std::string> out = reply(toy, think_grammar(true), limit, "hmm ", 40, &st);
  ASSERT_EQ(out.size(), 8u) << joined(out);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], "hmm ");
  EXPECT_EQ(out[5], "</think>");  // the marker as one token
  EXPECT_EQ(joined(out), "hmm hmm hmm hmm hmm </think>{}");
  EXPECT_EQ(st->reasoning_tokens(), 5);
  EXPECT_TRUE(st->reasoning_forced());
  EXPECT_TRUE(st->complete());
}

TEST(ReasoningBudget, SpellsTheMarkerWhenItIsNotOneToken) {
  const Toy toy({"<eos>", "hmm ", "</", "think", ">", "{", "}", "th", "<think>"});
  ReasoningLimit limit{"<think>", "</think>", true, 3};
  const std::vector<std::string> out = reply(toy, think_grammar(true), limit, "hmm ", 40);
  EXPECT_EQ(joined(out), "hmm hmm hmm </think>{}");
  ASSERT_GE(out.size(), 6u);
  EXPECT_EQ(out[3], "</");
  EXPECT_EQ(out[4], "think");  // the longest piece, not "th"
}

TEST(ReasoningBudget, ZeroBudgetClosesAtOnce) {
  const Toy toy({"<eos>", "hmm ", "</think>", "{", "}"});
  const std::vector<std::string> out = reply(toy, think_grammar(true), {"<think>", "</think>", true, 0}, "hmm ", 20);
  EXPECT_EQ(joined(out), "</think>{}");
}

TEST(ReasoningBudget, OptionalBlockIsCountedOnceOpened) {
  const Toy toy({"<eos>", "hmm ", "</think>", "{", "}", "<think>"});
  // The model opens the block first (its favourite is not allowed before it: the
  // masked draw takes "<think>" over "{" by a small margin).
  GrammarConstraint c{grammar::Grammar::parse(think_grammar(false)), toy.vocab, {"<think>", "</think>", false, 4}};
  GrammarState st(c);
  Sampler sampler(SamplerConfig{});
  std::vector<float> logits(toy.tokens.size(), 0.0f);
  logits[1] = 10.0f;
  logits[5] = 1.0f;
  std::vector<int32_t> gen;
  std::string text;
  for (int i = 0; i < 30; ++i) {
    const int32_t id = st.sample(sampler, logits, gen, gen, std::vector<int32_t>{0});
    if (id == 0) break;
    gen.push_back(id);
    text += toy.tokens[static_cast<size_t>(id)];
  }
  EXPECT_EQ(text, "<think>hmm hmm hmm hmm </think>{}");
  EXPECT_EQ(st.reasoning_tokens(), 4);
}

TEST(ReasoningBudget, NoLimitLeavesTheBlockToTheModel) {
  const Toy toy({"<eos>", "hmm ", "</think>", "{", "}"});
  const std::vector<std::string> out = reply(toy, think_grammar(true), {"<think>", "</think>", true, -1}, "hmm ", 50);
  EXPECT_EQ(out.size(), 50u);  // reasons until max_tokens
}

TEST(ReasoningBudget, AnAnswerWithoutTheBlockIsNotCounted) {
  const Toy toy({"<eos>", "hmm ", "</think>", "{", "}", "<think>"});
  std::unique_ptr<GrammarState> st;
  // Favouring "{": no block is opened, nothing is counted or forced.
  const std::vector<std::string> out = reply(toy, think_grammar(false), {"<think>", "</think>", false, 0}, "{", 10, &st);
  EXPECT_EQ(joined(out), "{}");
  EXPECT_EQ(st->reasoning_tokens(), 0);
  EXPECT_FALSE(st->reasoning_forced());
}

TEST(ReasoningBudget, CompletesAPartlyWrittenMarker) {
  // The budget runs out just after "</": the rest of the marker is forced.
  const Toy toy({"<eos>", "hmm ", "</", "think", ">", "{", "}", "</think>"});
  GrammarConstraint c{grammar::Grammar::parse(think_grammar(true)), toy.vocab, {"", "</think>", true, 2}};
  GrammarState st(c);
  Sampler sampler(SamplerConfig{});
  std::vector<float> logits(toy.tokens.size(), 0.0f);
  std::vector<int32_t> gen;
  std::string text;
  for (int i = 0; i < 20; ++i) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    logits[i == 0 ? 1 : i == 1 ? 2 : 1] = 10.0f;  // "hmm ", "</", then "hmm " again
    const int32_t id = st.sample(sampler, logits, gen, gen, std::vector<int32_t>{0});
    if (id == 0) break;
    gen.push_back(id);
    text += toy.tokens[static_cast<size_t>(id)];
  }
  EXPECT_EQ(text, "hmm </think>{}");
}

}  // namespace
}  // namespace og
