// Grammar-constrained decoding cost on the 128256-token Llama 3 vocabulary
// (one thread): the full token mask of a JSON grammar at several states,
// cold (fresh matcher: the DFA states on the way are built), warm (DFA built,
// no mask cache) and cached, the first mask of a rule met in a new context,
// the allows() check of one sampled token, and a simulated decode of a JSON
// document token by token (allows + full mask + accept per step, as a
// sampler that always needs the mask: the worst case). Medians, since a busy
// machine only adds time.
// Usage: bench_grammar_bench [repeats=20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using og::grammar::Grammar;
using og::grammar::GrammarLimits;
using og::grammar::Matcher;
using og::grammar::TokenMask;
using og::grammar::TokenVocab;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

constexpr const char* kJson = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" char* "\"" ws
char   ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= ([ \t\n] ws)?
)";

constexpr const char* kDocument = R"({"name": "Ada Lovelace", "born": 1815, "died": 1852.9,
  "fields": ["mathematics", "computing"], "notes": "Wrote the first program — für die Analytical Engine, 中文 ok",
  "nested": {"a": [1, 2, {"b": null, "c": true}], "d": "x\"y\\z"}, "score": -0.25e-3})";

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<bool> allowed;
  std::unique_ptr<og::Tokenizer> tokenizer;
};

Vocab load_vocab() {
  Vocab v;
  v.tokenizer = og::Tokenizer::from_path(std::string(OG_TESTDATA_DIR) + "/vocab/llama3.2-bpe/tokenizer.json");
  for (int32_t id = 0; id < v.tokenizer->n_vocab(); ++id) {
    v.tokens.push_back(v.tokenizer->token_bytes(id));
    const og::TokenType t = v.tokenizer->token_type(id);
    v.allowed.push_back(t == og::TokenType::kNormal || t == og::TokenType::kByte);
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double cold_us = 0, warm_us = 0, cached_us = 0, allows_ns = 0;
  int32_t allowed = 0;
};

// The mask at the state after `prefix` (medians over `repeats` runs): cold
// (a fresh matcher: DFA states on the way built, nothing cached), warm (DFA
// built, no mask cache: the whole walk), cached (the same state again).
Timing time_state(const std::string& prefix, const TokenVocab& vocab, int repeats) {
  Timing t;
  GrammarLimits no_cache;
  no_cache.mask_cache_bytes = 0;
  const auto g = Grammar::parse(kJson);
  const auto g_nc = Grammar::parse(kJson, no_cache);
  TokenMask mask;
  std::vector<double> cold, warm, cached;
  for (int r = 0; r < repeats; ++r) {
    Matcher m(g_nc);
    if (!m.accept_bytes(prefix)) og::fail("bench: the grammar rejects ", prefix);
    auto t0 = Clock::now();
    m.fill_mask(vocab, mask);
    cold.push_back(us_since(t0));
    t0 = Clock::now();
    m.fill_mask(vocab, mask);
    warm.push_back(us_since(t0));
  }
  t.allowed = mask.count();
  Matcher m(g);
  m.accept_bytes(prefix);
  m.fill_mask(vocab, mask);
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    m.fill_mask(vocab, mask);
    cached.push_back(us_since(t0));
  }
  t.cold_us = median(cold);
  t.warm_us = median(warm);
  t.cached_us = median(cached);
  // allows() on random tokens (most of them allowed inside a string).
  std::mt19937 rng(1);
  std::vector<int32_t> ids(4096);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab.n_vocab()));
  for (int32_t id : ids) (void)m.allows(vocab, id);  // warm the transitions
  int hits = 0;
  std::vector<double> per;
  for (int rep = 0; rep < 10; ++rep) {
    const auto t0 = Clock::now();
    for (int32_t id : ids) hits += m.allows(vocab, id);
    per.push_back(us_since(t0) * 1000 / static_cast<double>(ids.size()));
  }
  t.allows_ns = median(per);
  if (hits < 0) std::printf("?");
  return t;
}

// The first mask at `prefix` in a matcher that has already computed the mask
// at `before`, the same rule in another context: the truncated state's walk
// is cached, only tokens that leave the rule are walked (median).
double time_new_context(const std::string& before, const std::string& prefix, const TokenVocab& vocab, int repeats) {
  const auto g = Grammar::parse(kJson);
  TokenMask mask;
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    Matcher warm(g);
    warm.accept_bytes(before);
    warm.fill_mask(vocab, mask);
    Matcher m = warm;
    m.reset();
    if (!m.accept_bytes(prefix)) og::fail("bench: the grammar rejects ", prefix);
    // The DFA steps to the state are not what is measured: take them first.
    (void)m.allows(vocab, 0);
    const auto t0 = Clock::now();
    m.fill_mask(vocab, mask);
    t.push_back(us_since(t0));
  }
  return median(t);
}

struct DecodeRun {
  double mean = 0, p50 = 0, p90 = 0, max = 0, allows = 0;
  size_t n = 0;
};

// Token by token through kDocument: allows(next) + fill_mask + accept per
// step, from a fresh matcher (every DFA state and mask built on the way).
DecodeRun decode_once(const Vocab& v, const TokenVocab& vocab, bool cache) {
  GrammarLimits lim;
  if (!cache) lim.mask_cache_bytes = 0;
  const auto g = Grammar::parse(kJson, lim);
  const std::vector<int32_t> ids = v.tokenizer->encode(kDocument, false, false);
  Matcher m(g);
  TokenMask mask;
  std::vector<double> steps;
  double allows_total = 0;
  for (int32_t id : ids) {
    auto t0 = Clock::now();
    const bool ok = m.allows(vocab, id);
    allows_total += us_since(t0);
    t0 = Clock::now();
    m.fill_mask(vocab, mask);
    steps.push_back(us_since(t0));
    if (!ok || !mask.test(id) || !m.accept_token(vocab, id)) og::fail("bench: the document's token ", id, " is rejected");
  }
  if (!m.is_complete()) og::fail("bench: the document is not complete");
  DecodeRun r;
  r.n = steps.size();
  for (double x : steps) r.mean += x / static_cast<double>(steps.size());
  std::sort(steps.begin(), steps.end());
  r.p50 = steps[steps.size() / 2];
  r.p90 = steps[steps.size() * 9 / 10];
  r.max = steps.back();
  r.allows = allows_total / static_cast<double>(steps.size());
  return r;
}

// The run with the lowest mean of five (a busy machine only adds time).
void simulate_decode(const Vocab& v, const TokenVocab& vocab, bool cache) {
  DecodeRun best;
  best.mean = 1e30;
  for (int k = 0; k < 5; ++k) {
    const DecodeRun r = decode_once(v, vocab, cache);
    if (r.mean < best.mean) best = r;
  }
  std::printf("decode %-9s %3zu tokens: mask mean %7.1f us  p50 %7.1f  p90 %7.1f  max %8.1f  | allows mean %5.2f us\n",
              cache ? "(cache)" : "(nocache)", best.n, best.mean, best.p50, best.p90, best.max, best.allows);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
    auto t0 = Clock::now();
    const Vocab v = load_vocab();
    const double load_ms = us_since(t0) / 1000;
    t0 = Clock::now();
    const TokenVocab vocab(v.tokens, v.allowed);
    std::printf("Llama 3 vocabulary: %d tokens, tokenizer load %.0f ms, trie %zu nodes built in %.1f ms\n",
                vocab.n_vocab(), load_ms, vocab.n_trie_nodes(), us_since(t0) / 1000);
    const std::pair<const char*, std::string> states[] = {
        {"start", ""},
        {"object start", "{"},
        {"key string", "{\"na"},
        {"value start", "{\"name\": "},
        {"string value", "{\"name\": \"Ada"},
        {"mid-UTF-8 char", "{\"name\": \"f\xC3"},
        {"number", "{\"born\": 18"},
        {"literal", "{\"ok\": tr"},
        {"after value", "{\"a\": [1, 2"},
        {"complete", "{\"a\": 1}"},
    };
    std::printf("%-15s %8s %10s %10s %10s %11s\n", "state", "allowed", "cold us", "warm us", "cached us", "allows ns");
    for (const auto& [name, prefix] : states) {
      const Timing t = time_state(prefix, vocab, repeats);
      std::printf("%-15s %8d %10.1f %10.1f %10.2f %11.1f\n", name, t.allowed, t.cold_us, t.warm_us, t.cached_us,
                  t.allows_ns);
    }
    std::printf("first mask in a new context (the rule's truncated walk cached from another context):\n");
    const char* contexts[][3] = {
        {"string value", "{\"a\": \"x", "{\"a\": \"x\", \"b\": {\"c\": [\"y"},
        {"key string", "{\"a\": \"x", "{\"a\": {\"b\": 1, \"c"},
        {"number", "{\"a\": 1", "{\"a\": 1, \"b\": [{\"c\": 2"},
        {"value start", "{\"a\": ", "{\"a\": [1, {\"b\": "},
    };
    for (const auto& c : contexts) {
      std::printf("  %-15s %10.1f us\n", c[0], time_new_context(c[1], c[2], vocab, repeats));
    }
    simulate_decode(v, vocab, true);
    simulate_decode(v, vocab, false);
  } catch (const og::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
