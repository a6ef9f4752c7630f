// Hostile grammars (GBNF) against the parser's and matcher's bounds
// (GrammarLimits, issue 50): long rule chains, deep left and right recursion,
// deep groups and huge repetitions either work or end within seconds with a
// one-line og::Error naming the limit, never a crash (the C++ stack) or a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/error.h"
#include "grammar/grammar.h"

namespace og::grammar {
namespace {

using Clock = std::chrono::steady_clock;

// The parse's error ("" when it parsed), checked to come quickly and in one line.
std::string parse_error(const std::string& text) {
  const auto t0 = Clock::now();
  std::string error;
  try {
    Grammar::parse(text);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 10.0) << text.substr(0, 80);
  EXPECT_EQ(error.find('\n'), std::string::npos) << error.substr(0, 200);
  EXPECT_LT(error.size(), 1000u) << error.substr(0, 200);
  return error;
}

bool accepts(const std::string& grammar, const std::string& text) {
  Matcher m(Grammar::parse(grammar));
  return m.accept_bytes(text) && m.is_complete();
}

TEST(GbnfBounds, ALongChainOfRulesParsesAndMatches) {
  // 40,000 rules each naming the next: compiling must not recurse once per rule.
  std::string g = "root ::= r0\n";
  const int n = 40000;
  for (int i = 0; i < n; ++i) g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  g += "r" + std::to_string(n) + " ::= \"x\"\n";
  EXPECT_EQ(parse_error(g), "");
  EXPECT_TRUE(accepts(g, "x"));
}

TEST(GbnfBounds, TooManyRulesIsAnError) {
  std::string g = "root ::= \"x\"\n";
  for (int i = 0; i < 70000; ++i) g += "a" + std::to_string(i) + " ::= \"y\"\n";
  EXPECT_NE(parse_error(g).find("more than 65536 rules"), std::string::npos) << parse_error(g);
}

TEST(GbnfBounds, DeepGroupsAndBigRepetitionsAreErrors) {
  EXPECT_NE(parse_error("root ::= " + std::string(200, '(') + "\"x\"" + std::string(200, ')')).find("nested deeper"),
            std::string::npos);
  EXPECT_NE(parse_error("root ::= \"x\"{0,100000}").find("repetition count"), std::string::npos);
  // Nested repetitions multiply: a bound on elements or on live parses stops them.
  const std::string e = parse_error("root ::= ((\"x\"{0,1000}){0,1000}){0,1000}");
  EXPECT_TRUE(e.find("elements") != std::string::npos || e.find("parses are alive") != std::string::npos) << e;
}

TEST(GbnfBounds, DeepRecursionAtMatchTimeIsRejectedNotACrash) {
  const std::string nested = "root ::= \"(\" root \")\" | \"x\"\n";
  EXPECT_TRUE(accepts(nested, std::string(100, '(') + "x" + std::string(100, ')')));
  // Deeper than max_stack_depth (4096): rejected as if the grammar did not allow it.
  Matcher m(Grammar::parse(nested));
  EXPECT_FALSE(m.accept_bytes(std::string(10000, '(')));
  const std::string left = "root ::= root \"x\" | \"x\"\n";  // left recursion
  const std::string err = parse_error(left);
  if (err.empty()) {
    EXPECT_TRUE(accepts(left, std::string(50, 'x')));
  } else {
    EXPECT_NE(err.find("recurs"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace og::grammar
