// The grammar text format: what parses, and each refusal as an og::Error
// naming line:column (syntax, undefined rules, left recursion, no root,
// exceeded limits), never a crash or a hang.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "grammar_test_util.h"

namespace og::grammar {
namespace {

using testing::kJsonGrammar;
using testing::matches;
using testing::parse;
using testing::parse_error;

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

TEST(GrammarParse, JsonGrammarParses) {
  auto g = parse(kJsonGrammar);
  EXPECT_GT(g->n_rules(), 8);
  EXPECT_GT(g->n_byte_classes(), 10);
  EXPECT_LT(g->n_byte_classes(), 100);
}

TEST(GrammarParse, RuleBodiesSpanLinesAndEndAtTheNextRule) {
  auto g = parse("root ::=\n  \"a\"\n  | \"b\" # a comment | \"c\"\n  | x\nx ::= \"x\" x2 x2 ::= \"y\"");
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_TRUE(matches(g, "b"));
  EXPECT_FALSE(matches(g, "c"));
  EXPECT_TRUE(matches(g, "xy"));
}

TEST(GrammarParse, RulesMayBeUsedBeforeTheyAreDefined) {
  EXPECT_TRUE(matches("root ::= a b\na ::= \"1\"\nb ::= \"2\"", "12"));
}

TEST(GrammarParse, NamesWithDashesAndDigits) {
  EXPECT_TRUE(matches("root ::= json-value_2\njson-value_2 ::= \"v\"", "v"));
}

TEST(GrammarParse, Escapes) {
  EXPECT_TRUE(matches(R"(root ::= "\n\r\t\f\\\"\'\[\]\-\^\/")", "\n\r\t\f\\\"'[]-^/"));
  EXPECT_TRUE(matches(R"(root ::= "\x41\u00e9\U0001F600")", "A\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_TRUE(matches(R"(root ::= [\x00-\x08])", std::string(1, '\0')));
  EXPECT_TRUE(matches(R"(root ::= [\]\-]+)", "]-]"));
  EXPECT_TRUE(matches("root ::= \"é\" [ü]", "éü"));
}

TEST(GrammarParse, ClassDashAtTheEdgesIsLiteral) {
  auto g = parse("root ::= [-a] [b-]");
  EXPECT_TRUE(matches(g, "-b"));
  EXPECT_TRUE(matches(g, "a-"));
  EXPECT_FALSE(matches(g, "ab-"));
}

TEST(GrammarParse, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("root ::= \"a\"\nx ::= \"b"), "grammar line 2:7: unterminated string literal");
  EXPECT_EQ(parse_error("root ::= (\"a\" | \"b\""), "grammar line 1:10: '(' is never closed");
  EXPECT_EQ(parse_error("root ::= \"a\" )"), "grammar line 1:14: ')' without a matching '('");
  EXPECT_EQ(parse_error("root ::= [a-"), "grammar line 1:10: unterminated character class");
  EXPECT_EQ(parse_error("root ::= [z-a]"), "grammar line 1:11: a class range runs backwards");
  EXPECT_EQ(parse_error("root ::= \"\\q\""), "grammar line 1:11: unknown escape '\\q'");
  EXPECT_EQ(parse_error("root ::= \"\\u12\""), "grammar line 1:11: the escape needs 4 hex digits");
  EXPECT_EQ(parse_error("root ::= \"\\uD800\""), "grammar line 1:11: the escape is not a Unicode scalar value");
  EXPECT_EQ(parse_error("root ::= \"a\"{3,2}"), "grammar line 1:13: repetition {3,2}: the maximum is below the minimum");
  EXPECT_EQ(parse_error("root ::= \"a\"{2"), "grammar line 1:13: expected '}' to close the repetition");
  EXPECT_EQ(parse_error("root ::= \"a\" @"), "grammar line 1:14: unexpected character '@'");
  EXPECT_EQ(parse_error("root \"a\""), "grammar line 1:6: expected '::=' after the rule name 'root'");
  EXPECT_EQ(parse_error("  ::= \"a\""), "grammar line 1:3: expected a rule name at the start of a rule");
  EXPECT_EQ(parse_error("root ::= (\"a\"\nx ::= \"b\")"), "grammar line 1:10: '(' is never closed before the next rule");
  EXPECT_EQ(parse_error("root ::= \"\xff\""), "grammar line 1:11: invalid UTF-8 in the grammar text");
  EXPECT_TRUE(starts_with(parse_error("root ::= *"), "grammar line 1:10: unexpected character '*'"));
}

TEST(GrammarParse, UndefinedAndDuplicateRulesAndNoRoot) {
  EXPECT_EQ(parse_error("root ::= a\n  b\nb ::= \"x\""), "grammar line 1:10: undefined rule 'a'");
  EXPECT_EQ(parse_error("root ::= \"a\"\nroot ::= \"b\""),
            "grammar line 2:1: rule 'root' is defined twice (first at line 1:1)");
  EXPECT_EQ(parse_error("start ::= \"a\""), "grammar: no rule named 'root' (matching starts at it)");
  EXPECT_EQ(parse_error(""), "grammar: no rule named 'root' (matching starts at it)");
  EXPECT_EQ(parse_error("# only a comment\n"), "grammar: no rule named 'root' (matching starts at it)");
  auto g = Grammar::parse("start ::= \"a\"", {}, "start");
  EXPECT_TRUE(matches(g, "a"));
}

TEST(GrammarParse, LeftRecursionIsRefused) {
  EXPECT_TRUE(starts_with(parse_error("root ::= root \"a\" | \"b\""), "grammar line 1:1: rule 'root' is left-recursive"));
  // Through another rule, and behind something that can match "".
  const std::string e = parse_error("root ::= x\nx ::= y \"a\"\ny ::= \"b\"? x");
  EXPECT_TRUE(starts_with(e, "grammar line 2:1: rule 'x' is left-recursive (x -> y -> x)")) << e;
  // Right recursion is fine.
  EXPECT_TRUE(matches("root ::= \"a\" root | \"\"", "aaaa"));
}

TEST(GrammarParse, RepeatingTheEmptyStringIsRefused) {
  EXPECT_TRUE(starts_with(parse_error("root ::= \"\"*"), "grammar line 1:12: '*', '+' or '{m,}' repeats something"));
  EXPECT_TRUE(starts_with(parse_error("root ::= (\"a\"?)+"), "grammar line 1:16: '*', '+' or '{m,}' repeats"));
  EXPECT_TRUE(starts_with(parse_error("root ::= x{2,}\nx ::= \"a\" | "), "grammar line 1:11: '*', '+' or '{m,}'"));
  // Bounded repetition of something nullable is fine.
  EXPECT_TRUE(matches("root ::= (\"a\"?){3}", "aa"));
}

TEST(GrammarParse, LimitsOnHostileGrammars) {
  GrammarLimits lim;
  lim.max_text_bytes = 100;
  EXPECT_TRUE(starts_with(parse_error(std::string(200, ' '), lim), "grammar: the text is 200 bytes"));
  lim = {};
  lim.max_nesting = 8;
  EXPECT_TRUE(starts_with(parse_error("root ::= " + std::string(9, '(') + "\"a\"" + std::string(9, ')'), lim),
                          "grammar line 1:18: groups nested deeper than 8"));
  // Deep nesting under the default limit is refused before the C++ stack runs out.
  EXPECT_NE(parse_error("root ::= " + std::string(100000, '(')).find("nested deeper"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{100001}").find("above the limit of 10000"), std::string::npos);
  // Repetitions of repetitions multiply: bounded by the element budget.
  std::string big = "root ::= ";
  for (int i = 0; i < 200; ++i) big += "\"a\"{10000} ";
  EXPECT_NE(parse_error(big).find("more than 1048576 elements"), std::string::npos);
  // Repetitions of groups of repetitions add up rather than multiply (a group is one call).
  EXPECT_EQ(parse_error("root ::= ((\"a\"{10000}){10000}){10000}"), "");
  lim = {};
  lim.max_rules = 100;
  EXPECT_NE(parse_error("root ::= \"a\"{0,200}", lim).find("more than 100 rules"), std::string::npos);
  // A long chain of rules is checked without deep recursion.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 50000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  chain += "r50000 ::= \"z\"";
  EXPECT_TRUE(matches(chain, "z"));
  chain += " | r0";
  EXPECT_NE(parse_error(chain).find("left-recursive (r0 -> r1 -> r2 -> r3 -> ... (49994 more) -> r49998 -> r49999 -> r50000 -> r0)"),
            std::string::npos) << parse_error(chain).substr(0, 300);
}

// The grammars in tests/grammar/data (also the fuzzer's seeds) parse, and
// accept and reject the examples their "# accepts:" / "# rejects:" lines give
// (with \n for a newline).
TEST(GrammarParse, DataGrammarsParseAndMatchTheirExamples) {
  const std::filesystem::path dir = std::filesystem::path(OG_SOURCE_DIR) / "tests/grammar/data";
  int n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gbnf") continue;
    ++n_files;
    std::ifstream f(entry.path());
    std::stringstream text;
    text << f.rdbuf();
    SCOPED_TRACE(entry.path().filename().string());
    auto g = parse(text.str());
    int n_examples = 0;
    std::string line;
    for (std::istringstream lines(text.str()); std::getline(lines, line);) {
      for (const std::string key : {"# accepts: ", "# rejects: "}) {
        if (line.rfind(key, 0) != 0) continue;
        std::string example = line.substr(key.size());
        for (size_t at; (at = example.find("\\n")) != std::string::npos;) example.replace(at, 2, "\n");
        EXPECT_EQ(matches(g, example), key == "# accepts: ") << example;
        ++n_examples;
      }
    }
    EXPECT_GE(n_examples, 2);
  }
  EXPECT_GE(n_files, 5);
}

}  // namespace
}  // namespace og::grammar
