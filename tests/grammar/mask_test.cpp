// Token masks: the trie walk (Matcher::fill_mask, with its bulk subtree
// check and mask cache) against its plain twin (fill_mask_plain: every token
// tried alone) and against allows(), over many grammars and states, on a
// synthetic vocabulary full of edge cases and on the real 128k-token Llama 3
// vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "grammar_test_util.h"
#include "tokenizer/tokenizer.h"

namespace og::grammar {
namespace {

using testing::kJsonGrammar;
using testing::parse;

// Every single byte, JSON-ish pieces, partial UTF-8 characters (lead bytes
// alone, continuations alone, a character split 1+2), duplicates, an empty
// token, and random strings over an alphabet the grammars care about.
std::vector<std::string> synthetic_vocab() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"{", "{\"", "\":", "\": ", "\",", "\"}", "}", "},", "}}", "[", "[{", "]", "],", ", ", " \"",
                        "true", "tr", "ue", "false", "null", "nu", "ll", "0", "12", "123", "-1", ".5", "e+", "1e9",
                        "\\n", "\\u", "\\\"", "00e9", " ", "  ", "\n", "\n  ", "é", "中", "😀", "\xC3", "\xA9",
                        "\xE4\xB8", "\xAD\"", "\xF0\x9F", "\x98\x80", "é\"", "\"é", "abc", "hello", " world", "",
                        "{\"a\": 1}", "\"a\":", "true,", "null}"}) {
    v.push_back(t);
  }
  v.push_back("{");  // a duplicate of an earlier token
  v.push_back(std::string("\0", 1) + "x");
  std::mt19937 rng(5);
  const std::string alphabet = "{}[]\":, abc01239.-eE\\nu\n\t\xC3\xA9\xE4\xB8\xAD";
  for (int i = 0; i < 3000; ++i) {
    std::string t;
    for (int n = 1 + static_cast<int>(rng() % 6); n > 0; --n) t += alphabet[rng() % alphabet.size()];
    v.push_back(t);
  }
  return v;
}

// fill_mask == fill_mask_plain, twice (the second from the mask cache), and
// allows(id) == the mask's bit for every id.
void expect_masks_agree(const Matcher& m, const TokenVocab& vocab, const std::string& where) {
  TokenMask fast, plain, again;
  m.fill_mask(vocab, fast);
  fill_mask_plain(m, vocab, plain);
  ASSERT_EQ(fast.bits, plain.bits) << where << ": fast allows " << fast.count() << ", plain " << plain.count();
  m.fill_mask(vocab, again);
  ASSERT_EQ(again.bits, plain.bits) << where << " (cached)";
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    ASSERT_EQ(m.allows(vocab, id), plain.test(id)) << where << " token " << id;
  }
}

// Walks `text` token by token (greedy longest allowed token), checking the
// masks at every step.
void check_along(const std::shared_ptr<const Grammar>& g, const TokenVocab& vocab, const std::string& text) {
  Matcher m(g);
  size_t at = 0;
  while (at < text.size()) {
    expect_masks_agree(m, vocab, "at byte " + std::to_string(at) + " of " + text);
    if (::testing::Test::HasFatalFailure()) return;
    int32_t best = -1;
    for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
      const std::string_view t = vocab.bytes(id);
      if (vocab.in_trie(id) && text.compare(at, t.size(), t) == 0 && m.allows(vocab, id) &&
          (best < 0 || t.size() > vocab.bytes(best).size())) {
        best = id;
      }
    }
    ASSERT_GE(best, 0) << "no token continues " << text.substr(0, at);
    ASSERT_TRUE(m.accept_token(vocab, best));
    at += vocab.bytes(best).size();
  }
  expect_masks_agree(m, vocab, "at the end of " + text);
  EXPECT_TRUE(m.is_complete()) << text;
}

TEST(GrammarMask, FastEqualsPlainOnManyGrammarsAndStates) {
  std::vector<std::string> tokens = synthetic_vocab();
  std::vector<bool> allowed(tokens.size(), true);
  allowed[7] = false;  // an excluded (special) token
  allowed['{'] = false;
  TokenVocab vocab(tokens, allowed);
  struct Case {
    std::string grammar, text;
  };
  const std::vector<Case> cases = {
      {std::string(kJsonGrammar), "{\"a\": [1, 2.5, {\"b\": \"x\\\"é中😀\\u00e9\"}], \"c\": null}\n"},
      {"root ::= [a-c]{2,5} \" \"?", "abca "},
      {"root ::= \"hello\" (\" world\")* | \"tr\" \"ue\"", "hello world world"},
      {"root ::= [^\"]* \"\\\"\"", "ab中é0\""},
      {"root ::= .*", "anything é 😀 {}"},
      {"root ::= ([0-9] | [\\u4e00-\\u9fff])+", "12中3"},
      {"root ::= \"\" | \"\\u00e9\"+", "éé"},
      {"root ::= x y\nx ::= \"a\"? \"b\"?\ny ::= \"c\" | \"\"", "abc"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.grammar);
    check_along(parse(c.grammar), vocab, c.text);
    if (HasFatalFailure()) return;
  }
  // The same without a mask cache.
  GrammarLimits lim;
  lim.mask_cache_bytes = 0;
  check_along(parse(kJsonGrammar, lim), vocab, "{\"k\": [true, false, -0.25e-3]}");
  // A tiny cache that keeps being cleared.
  lim.mask_cache_bytes = 3000;
  check_along(parse(kJsonGrammar, lim), vocab, "{\"k\": [true, false, -0.25e-3]}");
}

TEST(GrammarMask, ExcludedAndEmptyTokensAreNeverAllowed) {
  std::vector<std::string> tokens = {"a", "", "b", "a"};
  TokenVocab vocab(tokens, {true, true, false, true});
  Matcher m(parse("root ::= [a-z]*"));
  TokenMask mask;
  m.fill_mask(vocab, mask);
  EXPECT_EQ(mask.ids(), (std::vector<int32_t>{0, 3}));
  EXPECT_FALSE(m.allows(vocab, 1));
  EXPECT_FALSE(m.allows(vocab, 2));
  EXPECT_FALSE(m.accept_token(vocab, 2));
  EXPECT_FALSE(m.allows(vocab, 99));
  EXPECT_THROW(TokenVocab(tokens, {true}), Error);
}

// The Llama 3 vocabulary (128256 tokens, byte-level BPE) as the runtime
// will hand it over: each token's bytes from the tokenizer, special and
// control tokens left out.
struct Llama3 {
  std::vector<std::string> tokens;
  std::vector<bool> allowed;
  std::unique_ptr<TokenVocab> vocab;
};

const Llama3& llama3() {
  static const Llama3 v = [] {
    const std::string path = std::string(OG_TESTDATA_DIR) + "/vocab/llama3.2-bpe/tokenizer.json";
    if (!std::filesystem::exists(path)) {
      fail("the Llama 3 vocabulary is missing: ", path, " (../shared/testdata)");
    }
    Llama3 out;
    auto tok = Tokenizer::from_path(path);
    for (int32_t id = 0; id < tok->n_vocab(); ++id) {
      out.tokens.push_back(tok->token_bytes(id));
      out.allowed.push_back(tok->token_type(id) == TokenType::kNormal || tok->token_type(id) == TokenType::kByte);
    }
    out.vocab = std::make_unique<TokenVocab>(out.tokens, out.allowed);
    return out;
  }();
  return v;
}

// Masks along one document in one matcher, so that rules met again in new
// contexts (strings, values, numbers) reuse their cached truncated walks.
TEST(GrammarMask, Llama3VocabularyFastEqualsPlain) {
  const Llama3& l = llama3();
  ASSERT_EQ(l.vocab->n_vocab(), 128256);
  EXPECT_EQ(l.tokens[1], "\"");  // a byte-level piece mapped back to its byte
  EXPECT_EQ(l.tokens[220], " ");
  struct At {
    std::string next;  // bytes to accept before the check
    int32_t min_allowed, max_allowed;
  };
  const std::vector<At> steps = {
      {"", 1, 50},                      // only "{" and tokens starting with it
      {"{", 100, 20000},                // whitespace, a key's opening quote, "}"
      {"\"na", 100000, 128000},         // inside a key: nearly everything
      {"\": ", 500, 20000},             // a value's start
      {"{\"k\": \"x\xC3", 10, 200},     // a string in a new context, in the middle of a character
      {"\xA9y\", \"n\": -12", 100, 20000},  // inside a number
      {", \"l\": [tr", 1, 50},          // inside a literal
      {"ue, {\"q\": \"v", 100000, 128000},  // a string three levels down
      {"\"}]}}", 1, 5000},              // complete: only whitespace
  };
  Matcher m(parse(kJsonGrammar));
  std::string text;
  for (const At& at : steps) {
    text += at.next;
    ASSERT_TRUE(m.accept_bytes(at.next)) << text;
    TokenMask fast, plain;
    m.fill_mask(*l.vocab, fast);
    fill_mask_plain(m, *l.vocab, plain);
    EXPECT_EQ(fast.bits, plain.bits) << text << ": fast allows " << fast.count() << ", plain " << plain.count();
    EXPECT_GE(fast.count(), at.min_allowed) << text;
    EXPECT_LE(fast.count(), at.max_allowed) << text;
    for (int32_t id = 0; id < l.vocab->n_vocab(); id += 97) EXPECT_EQ(m.allows(*l.vocab, id), plain.test(id));
  }
  EXPECT_TRUE(m.is_complete());
}

// Near the stack depth limit a truncated walk would not see which parses go
// too deep: the mask falls back to a walk from the real state.
TEST(GrammarMask, DepthLimitNearTruncatedStates) {
  std::vector<std::string> tokens = synthetic_vocab();
  for (const char* t : {"[[", "[[[", "[[[[", "]]", "]]]", "[\"", "[1", "[[\"a", "\"]", "1]]"}) tokens.push_back(t);
  TokenVocab vocab(tokens);
  const std::string g = "root ::= value\n"
                        "value ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws | [0-9]+ ws | \"\\\"\" [a-z]* \"\\\"\" ws\n"
                        "ws ::= \" \"?";
  const std::string doc = "[[[\"ab\", [[1]], [[[\"c\"]]]]]]";
  int least = 1;  // the smallest limit the document fits in
  for (GrammarLimits lim; least < 200; ++least) {
    lim.max_stack_depth = least;
    if (testing::matches(parse(g, lim), doc)) break;
  }
  ASSERT_LT(least, 200);
  EXPECT_GT(least, 6);
  for (int depth : {least, least + 1, least + 3, least + 40}) {
    GrammarLimits lim;
    lim.max_stack_depth = depth;
    SCOPED_TRACE(depth);
    check_along(parse(g, lim), vocab, doc);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace og::grammar
