// Grammar composition helpers: text_without_rules matches exactly the texts
// that do not contain its word (against std::string::find on random texts
// over the word's characters, a multi-byte one and others, the empty text
// included), and text_without_any_rules the texts without any of its words;
// both stay flat on a long text (repetition, no recursion) and refuse words
// they cannot express; prefix_rules renames every rule.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "grammar/compose.h"
#include "grammar_test_util.h"

namespace og::grammar {
namespace {

using testing::matches;
using testing::parse;

TEST(TextWithout, MatchesExactlyTheTextsWithoutTheWord) {
  for (const std::string w : {"<tool_call>", "[TOOL_CALLS]", "ab", "<|python_tag|>"}) {
    const auto g = parse("root ::= free\n" + text_without_rules(w, "free"));
    std::vector<std::string> alphabet;
    for (char c : w) alphabet.emplace_back(1, c);
    for (const char* extra : {"x", "\xC3\xA9", "\n", " "}) alphabet.emplace_back(extra);
    std::mt19937 rng(7);
    int with = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string text;
      // Often start from pieces of the word so that near misses are common.
      const int n = static_cast<int>(rng() % 40);
      for (int k = 0; k < n; ++k) {
        if (rng() % 5 == 0) {
          text += w.substr(0, rng() % (w.size() + 1));
        } else {
          text += alphabet[rng() % alphabet.size()];
        }
      }
      const bool has = text.find(w) != std::string::npos;
      with += has ? 1 : 0;
      EXPECT_EQ(matches(g, text), !has) << w << " in '" << text << "'";
    }
    EXPECT_GT(with, 100) << w;  // both kinds of text were tried
    EXPECT_TRUE(matches(g, ""));
    EXPECT_FALSE(matches(g, w));
    EXPECT_TRUE(matches(g, w.substr(0, w.size() - 1)));
  }
}

TEST(TextWithout, ManyWordsMatchExactlyTheTextsWithoutAnyOfThem) {
  const std::vector<std::vector<std::string>> sets = {
      {"<|channel|>", "<|start|>assistant"}, {"<|end|>", "<|channel|>", "<|start|>assistant"}, {"abc", "abd", "ax"}};
  for (const std::vector<std::string>& words : sets) {
    const auto g = parse("root ::= free\n" + text_without_any_rules(words, "free"));
    std::vector<std::string> alphabet;
    for (const std::string& w : words)
      for (char c : w) alphabet.emplace_back(1, c);
    for (const char* extra : {"x", "\xC3\xA9", "\n"}) alphabet.emplace_back(extra);
    std::mt19937 rng(5);
    int with = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string text;
      const int n = static_cast<int>(rng() % 30);
      for (int k = 0; k < n; ++k) {
        if (rng() % 4 == 0) {
          const std::string& w = words[rng() % words.size()];
          text += w.substr(0, rng() % (w.size() + 1));
        } else {
          text += alphabet[rng() % alphabet.size()];
        }
      }
      bool has = false;
      for (const std::string& w : words) has = has || text.find(w) != std::string::npos;
      with += has ? 1 : 0;
      EXPECT_EQ(matches(g, text), !has) << words[0] << " ... in '" << text << "'";
    }
    EXPECT_GT(with, 100) << words[0];
    for (const std::string& w : words) {
      EXPECT_FALSE(matches(g, "x" + w + "x")) << w;
      EXPECT_TRUE(matches(g, w.substr(0, w.size() - 1))) << w;
    }
  }
  EXPECT_THROW(text_without_any_rules({}, "f"), Error);
  EXPECT_THROW(text_without_any_rules({"<a>", "[b]"}, "f"), Error);  // first characters differ
  EXPECT_THROW(text_without_any_rules({"<ab", "<abc"}, "f"), Error);  // a prefix of another
  EXPECT_THROW(text_without_any_rules({"<ab", "<a<"}, "f"), Error);   // first character recurs
}

TEST(TextWithout, ALongTextStaysWithinTheStackLimit) {
  const auto g = parse("root ::= free \"<tool_call>\"\n" + text_without_rules("<tool_call>", "free"));
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "<tool_cal <<t a <tool_ca\n";
  EXPECT_TRUE(matches(g, text + "<tool_call>"));
  EXPECT_FALSE(matches(g, text + "<tool_call><tool_call>"));
}

TEST(TextWithout, RefusesWordsItCannotExpress) {
  EXPECT_THROW(text_without_rules("", "f"), Error);
  EXPECT_THROW(text_without_rules("a", "f"), Error);
  EXPECT_THROW(text_without_rules("abca", "f"), Error);  // first character recurs
  EXPECT_THROW(text_without_rules("a b", "f"), Error);
  EXPECT_THROW(text_without_rules("a\"b", "f"), Error);
}

TEST(PrefixRules, RenamesDefinitionsAndUses) {
  const std::string t = prefix_rules("root ::= item+\nitem ::= \"root\" [a-z]\n", "x-");
  EXPECT_NE(t.find("x-root ::= x-item+"), std::string::npos) << t;
  EXPECT_NE(t.find("x-item ::= \"root\""), std::string::npos) << t;
  EXPECT_TRUE(matches("root ::= x-root\n" + t, "roota"));
}

}  // namespace
}  // namespace og::grammar
