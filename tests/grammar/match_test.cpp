// Matching bytes against grammars: JSON (against nlohmann's validator as an
// oracle), repetition bounds, UTF-8 classes fed a byte at a time, empty
// alternatives, completion, the all-or-nothing accept, the cached stepping
// against the plain one, and the match-time bounds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "grammar_test_util.h"

namespace og::grammar {
namespace {

using testing::kJsonGrammar;
using testing::matches;
using testing::parse;
using testing::prefix_ok;

TEST(GrammarMatch, JsonAcceptsAndRejects) {
  auto g = parse(kJsonGrammar);
  for (const char* ok : {"{}", "{ }", "{\"a\":1}", "{\"a\": [1, 2.5, -3e+7, true, false, null]}",
                         "{\"k\": {\"n\": {\"m\": []}}, \"s\": \"x\\\"y\\\\z\\u00e9\\n\"}", "{\"é中😀\": \"ü\"}\n",
                         "{\"a\":0.0,\"b\":-0,\"c\":1E5}"}) {
    EXPECT_TRUE(matches(g, ok)) << ok;
  }
  for (const char* bad : {"", "{", "[]", "{\"a\"}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{'a':1}",
                          "{\"a\":tru}", "{\"a\":\"\x01\"}", "{\"a\":\"\\x\"}", "{\"a\":1,}", "{} {}",
                          "{\"a\":\"\\u12\"}", "{\"a\":\"\xC3\"}", "{\"a\":\"\xC0\x80\"}"}) {
    EXPECT_FALSE(matches(g, bad)) << bad;
  }
  EXPECT_TRUE(prefix_ok(g, "{\"a\": [1, {\"b\": \"c"));
  EXPECT_FALSE(prefix_ok(g, "{\"a\": [1, {\"b\": \"c\" ]"));
}

// A JSON grammar for any value with RFC 8259 whitespace and unbounded
// numbers, so that nlohmann::json::accept is its oracle.
constexpr std::string_view kJsonAny = R"(
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
)";

std::string random_json(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  static const char* kAtoms[] = {"0", "-12", "3.25", "1e9", "-0.5E-3", "true", "false", "null", "\"\"",
                                 "\"a b\"", "\"\\\"q\\\\\"", "\"\\u00e9\\n\"", "\"é😀\"", "\"\x7F\""};
  const int kind = depth > 3 ? 0 : pick(4);
  const char* ws[] = {"", " ", "\n", "\t", "\r\n  "};
  if (kind == 0) return kAtoms[pick(14)];
  std::string s = kind == 1 ? "[" : "{";
  const int n = pick(4);
  for (int i = 0; i < n; ++i) {
    if (i) s += ",";
    s += ws[pick(5)];
    if (kind != 1) s += std::string("\"k") + std::to_string(i) + "\"" + ws[pick(5)] + ":" + ws[pick(5)];
    s += random_json(rng, depth + 1);
    s += ws[pick(5)];
  }
  return s + (kind == 1 ? "]" : "}");
}

TEST(GrammarMatch, JsonAgreesWithNlohmannOnRandomAndMutatedDocuments) {
  auto g = parse(kJsonAny);
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\",:.-+eE0123456789 \n\\tfnrul\x01\x7F\xC3\xA9";
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string doc = random_json(rng, 0);
    if (iter % 2) {  // mutate one to three bytes
      for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n && !doc.empty(); ++k) {
        const size_t at = rng() % doc.size();
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0: doc[at] = c; break;
          case 1: doc.insert(doc.begin() + static_cast<long>(at), c); break;
          default: doc.erase(at, 1); break;
        }
      }
    }
    if (doc.find("\\u") != std::string::npos && doc.find("\\u00e9") == std::string::npos) continue;  // lone surrogates
    const bool want = nlohmann::json::accept(doc);
    // Fed in random chunks: a chunk may end in the middle of a character.
    Matcher m(g);
    bool ok = true;
    for (size_t at = 0; at < doc.size() && ok;) {
      const size_t n = 1 + rng() % 4;
      ok = m.accept_bytes(std::string_view(doc).substr(at, n));
      at += n;
    }
    EXPECT_EQ(ok && m.is_complete(), want) << doc;
    (want ? accepted : rejected)++;
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 500);
}

TEST(GrammarMatch, RepetitionBounds) {
  auto g = parse("root ::= \"a\"{2,4}");
  EXPECT_FALSE(matches(g, "a"));
  EXPECT_TRUE(matches(g, "aa"));
  EXPECT_TRUE(matches(g, "aaaa"));
  EXPECT_FALSE(matches(g, "aaaaa"));
  auto exact = parse("root ::= (\"ab\"){3}");
  EXPECT_TRUE(matches(exact, "ababab"));
  EXPECT_FALSE(matches(exact, "abab"));
  EXPECT_FALSE(matches(exact, "abababab"));
  auto at_most = parse("root ::= \"x\"{,2} \"y\"");
  EXPECT_TRUE(matches(at_most, "y"));
  EXPECT_TRUE(matches(at_most, "xxy"));
  EXPECT_FALSE(matches(at_most, "xxxy"));
  auto at_least = parse("root ::= \"x\"{2,}");
  EXPECT_FALSE(matches(at_least, "x"));
  EXPECT_TRUE(matches(at_least, std::string(500, 'x')));
  auto plus = parse("root ::= [0-9]+ \"!\"?");
  EXPECT_FALSE(matches(plus, ""));
  EXPECT_TRUE(matches(plus, "123!"));
  EXPECT_FALSE(matches(plus, "!"));
  auto star = parse("root ::= \"ab\"* \"c\"");
  EXPECT_TRUE(matches(star, "c"));
  EXPECT_TRUE(matches(star, "ababc"));
  EXPECT_FALSE(matches(star, "abac"));
  // Stacked postfixes apply in turn: ("a"{2}){2} is four a's; {0} is nothing.
  EXPECT_TRUE(matches("root ::= \"a\"{2}{2}", "aaaa"));
  EXPECT_TRUE(matches("root ::= \"a\"{0} \"b\"", "b"));
  // A long bounded repetition is a chain of rules, not a wider state.
  auto many = parse("root ::= [a-z]{0,5000}");
  EXPECT_TRUE(matches(many, std::string(5000, 'q')));
  EXPECT_FALSE(matches(many, std::string(5001, 'q')));
}

TEST(GrammarMatch, EmptyAlternativesAndGroups) {
  auto g = parse("root ::= \"a\" | \nx ::= \"unused\"");
  EXPECT_TRUE(matches(g, ""));
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_FALSE(matches(g, "aa"));
  auto h = parse("root ::= \"<\" ( | \"b\" | () ) \">\" ()");
  EXPECT_TRUE(matches(h, "<>"));
  EXPECT_TRUE(matches(h, "<b>"));
  EXPECT_TRUE(matches("root ::= \"\"", ""));
  EXPECT_FALSE(matches("root ::= \"\"", "x"));
}

TEST(GrammarMatch, Utf8ClassesByteByByte) {
  auto g = parse("root ::= [à-ÿ]+ [^a-zà-ÿ] .");
  const std::string s = "àÿé" "\xE4\xB8\xAD" "\xF0\x9F\x98\x80";  // à ÿ é, then 中 (not a-z), then 😀 (any)
  Matcher m(g);
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_TRUE(m.accept_bytes(s.substr(i, 1))) << i;
    EXPECT_EQ(m.is_complete(), i + 1 == s.size()) << i;
  }
  EXPECT_FALSE(matches(g, "àa\xF0\x9F\x98\x80"));  // a is in a-z
  EXPECT_FALSE(matches(g, "ß" "x" "y"));           // ß is below à
  // Invalid UTF-8 never matches a class or `.`: overlong, surrogate, past U+10FFFF, stray continuation.
  auto any = parse("root ::= .*");
  EXPECT_TRUE(matches(any, "plain\n\xC3\xA9\xEF\xBF\xBF\xF4\x8F\xBF\xBF"));
  for (const char* bad : {"\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80",
                          "\x80", "\xFF", "\xC3"}) {
    EXPECT_FALSE(matches(any, bad)) << std::string_view(bad).size();
  }
}

// Random code points against random classes: the byte-level matcher agrees
// with a direct membership test, for every class shape the UTF-8 split makes.
TEST(GrammarMatch, RandomClassesAgreeWithCodePointMembership) {
  std::mt19937 rng(11);
  const uint32_t edges[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x3FFFF,
                            0x40000, 0x10FFFF};
  auto random_cp = [&]() -> uint32_t {
    uint32_t cp = rng() % 3 ? edges[rng() % 14] + (rng() % 5) - 2 : rng() % 0x110000;
    if (cp > 0x10FFFF) cp = 0x10FFFF;
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE000;
    return cp;
  };
  auto hex = [](uint32_t cp) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    return std::string(buf);
  };
  for (int iter = 0; iter < 60; ++iter) {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    std::string cls = rng() % 2 ? "[^" : "[";
    const bool negate = cls.size() == 2;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
      uint32_t a = random_cp(), b = random_cp();
      if (a > b) std::swap(a, b);
      ranges.push_back({a, b});
      cls += hex(a) + "-" + hex(b);
    }
    auto g = parse("root ::= " + cls + "]");
    for (int t = 0; t < 200; ++t) {
      const uint32_t cp = random_cp();
      bool in = false;
      for (auto [a, b] : ranges) in = in || (cp >= a && cp <= b);
      std::string bytes;
      {
        if (cp < 0x80) {
          bytes = std::string(1, static_cast<char>(cp));
        } else if (cp < 0x800) {
          bytes = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
        } else if (cp < 0x10000) {
          bytes = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                   static_cast<char>(0x80 | (cp & 0x3F))};
        } else {
          bytes = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
                   static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
        }
      }
      EXPECT_EQ(matches(g, bytes), in != negate) << cls << "] U+" << std::hex << cp;
    }
  }
}

TEST(GrammarMatch, CompletionAndContinuation) {
  auto g = parse("root ::= \"ab\" \"c\"?");
  Matcher m(g);
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.can_continue());
  ASSERT_TRUE(m.accept_bytes("ab"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.can_continue());
  ASSERT_TRUE(m.accept_bytes("c"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.can_continue());  // only EOS remains
  EXPECT_FALSE(m.accept_bytes("c"));
  m.reset();
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.accept_bytes("abc"));
}

TEST(GrammarMatch, AcceptIsAllOrNothingAndCopiesAreIndependent) {
  auto g = parse(kJsonGrammar);
  Matcher m(g);
  ASSERT_TRUE(m.accept_bytes("{\"a\":"));
  const Matcher saved = m;
  EXPECT_FALSE(m.accept_bytes(" 12x"));  // "12" would be fine, "x" is not
  EXPECT_TRUE(m == saved);
  Matcher copy = m;
  ASSERT_TRUE(copy.accept_bytes("1}"));
  EXPECT_TRUE(copy.is_complete());
  EXPECT_FALSE(m.is_complete());
  EXPECT_FALSE(m == copy);
  // Equal states are equal: each string body returns to the same state.
  Matcher a = m, b = m;
  ASSERT_TRUE(a.accept_bytes("\"xy"));
  ASSERT_TRUE(b.accept_bytes("\"q\\n\\u00e9z"));
  EXPECT_TRUE(a == b);
}

TEST(GrammarMatch, CachedSteppingEqualsPlainStepping) {
  auto g = parse(kJsonAny);
  std::mt19937 rng(3);
  for (int iter = 0; iter < 300; ++iter) {
    std::string doc = random_json(rng, 0);
    if (iter % 2) doc[rng() % doc.size()] = "{}[]\",:1a \xC3"[rng() % 12];
    Matcher fast(g);
    Matcher plain = fast;  // the same automaton: equal states compare equal
    for (size_t at = 0; at < doc.size(); at += 3) {
      const std::string_view chunk = std::string_view(doc).substr(at, 3);
      const bool f = fast.accept_bytes(chunk);
      ASSERT_EQ(f, plain.accepts_plain(chunk)) << doc;
      ASSERT_EQ(f, plain.accept_bytes_plain(chunk)) << doc;
      if (!f) break;
      ASSERT_TRUE(fast == plain) << doc;
      ASSERT_EQ(fast.is_complete(), plain.is_complete());
    }
  }
}

TEST(GrammarMatch, NestingPastTheStackDepthIsRejected) {
  GrammarLimits lim;
  lim.max_stack_depth = 10;
  auto g = parse("root ::= \"[\" root \"]\" | \"x\"", lim);
  EXPECT_TRUE(matches(g, "[[[[[x]]]]]"));
  EXPECT_FALSE(prefix_ok(g, std::string(20, '[')));
  // The default allows deep nesting.
  auto deep = parse("root ::= \"[\" root \"]\" | \"x\"");
  EXPECT_TRUE(matches(deep, std::string(1000, '[') + "x" + std::string(1000, ']')));
}

TEST(GrammarMatch, AmbiguityAndStateBoundsAreErrors) {
  // Each "a" doubles the live parses (two different continuations).
  auto g = parse("root ::= r\nr ::= \"a\" r \"b\" | \"a\" r \"c\" | \"\"");
  Matcher m(g);
  try {
    m.accept_bytes(std::string(40, 'a'));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 8192 parses are alive at once (an ambiguous grammar"),
              std::string::npos)
        << e.what();
  }
  // Duplicated alternatives do not multiply: equal stacks are one stack.
  EXPECT_TRUE(matches("root ::= (\"a\" | \"a\" | [a])*", std::string(2000, 'a')));
  GrammarLimits lim;
  lim.max_states = 50;
  auto counter = parse("root ::= \"a\" root \"b\" | \"\"", lim);
  Matcher c(counter);
  EXPECT_THROW(c.accept_bytes(std::string(100, 'a')), Error);
}

}  // namespace
}  // namespace og::grammar
