// libFuzzer target: the grammar engine (src/grammar/grammar.h) over arbitrary
// bytes. Input: grammar text (the bytes up to the first NUL) and, after it,
// bytes to match. Under small limits: parsing returns a grammar or throws
// og::Error; matching the bytes in chunks agrees with the plain stepping;
// and at the start, after half the bytes and at the end the token mask over a
// small vocabulary (every byte, pieces of the input, partial UTF-8) equals its
// plain twin and allows(). Match-time limits may throw og::Error. Never a
// crash, a hang, unbounded memory or another exception; a disagreement traps.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "grammar/grammar.h"

namespace {

using og::grammar::Grammar;
using og::grammar::GrammarLimits;
using og::grammar::Matcher;
using og::grammar::TokenMask;
using og::grammar::TokenVocab;

GrammarLimits small_limits() {
  GrammarLimits lim;
  lim.max_text_bytes = 64 << 10;
  lim.max_rules = 4000;
  lim.max_elements = 40000;
  lim.max_nesting = 32;
  lim.max_repeat = 200;
  lim.max_stack_depth = 64;
  lim.max_stacks = 512;
  lim.max_states = 4000;
  lim.mask_cache_bytes = 256 << 10;
  return lim;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// Every single byte, JSON-ish and UTF-8 pieces, and pieces of the input.
std::vector<std::string> vocabulary(std::string_view input) {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"ab", "abc", "{\"", "\":", "\",", "\"}", "[1", "12", "true", " ", "  ", "\n", "é", "中",
                        "\xC3", "\xA9", "\xE4\xB8", "\xF0\x9F\x98", "\x80"}) {
    v.push_back(t);
  }
  for (size_t at = 0; at + 1 < input.size() && v.size() < 400; at += 3) {
    v.push_back(std::string(input.substr(at, 2 + at % 5)));
  }
  return v;
}

void check_mask(const Matcher& m, const TokenVocab& vocab) {
  TokenMask fast, plain;
  m.fill_mask(vocab, fast);
  og::grammar::fill_mask_plain(m, vocab, plain);
  check(fast.bits == plain.bits);
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) check(m.allows(vocab, id) == plain.test(id));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view text = in.substr(0, nul);
  const std::string_view input = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  std::shared_ptr<const Grammar> g;
  try {
    g = Grammar::parse(text, small_limits());
  } catch (const og::Error&) {
    return 0;
  }
  try {
    const TokenVocab vocab(vocabulary(input));
    Matcher m(g);
    check_mask(m, vocab);
    // Chunks of 1..4 bytes; the fast and plain steps must agree on each.
    for (size_t at = 0; at < input.size();) {
      const size_t n = 1 + static_cast<uint8_t>(input[at]) % 4;
      const std::string_view chunk = input.substr(at, n);
      Matcher plain = m;
      const bool ok = m.accept_bytes(chunk);
      check(ok == plain.accepts_plain(chunk));
      check(ok == plain.accept_bytes_plain(chunk));
      if (!ok) break;
      check(m == plain);
      if (at < input.size() / 2 && at + n >= input.size() / 2) check_mask(m, vocab);
      at += n;
    }
    check_mask(m, vocab);
  } catch (const og::Error&) {
  }
  return 0;
}
