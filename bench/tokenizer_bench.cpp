// Tokenizer throughput on one thread: encode and decode MB/s of English-like
// text for a byte-level BPE vocabulary (Llama 3.2 tokenizer.json) and
// SentencePiece vocabularies (GGUF llama-spm scores, libsentencepiece .model).
// Usage: bench_tokenizer_bench [megabytes=4]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// English-like text: words drawn Zipf-style from the GPT-2 vocabulary's
// space-prefixed alphabetic pieces (their order follows merge frequency),
// with capitalized sentences, commas, numbers and paragraph breaks.
std::string make_text(size_t bytes) {
  auto gpt2 = og::Tokenizer::from_path(std::string(OG_TESTDATA_DIR) + "/vocab/ggml-vocab-gpt-2.gguf");
  std::vector<std::string> words;
  for (int32_t id = 0; id < gpt2->n_vocab() && words.size() < 20000; ++id) {
    const std::string w = gpt2->token_bytes(id);
    if (w.size() < 2 || w[0] != ' ') continue;
    bool alpha = true;
    for (size_t i = 1; i < w.size(); ++i) alpha = alpha && w[i] >= 'a' && w[i] <= 'z';
    if (alpha) words.push_back(w.substr(1));
  }
  std::mt19937_64 rng(1234);
  std::vector<double> weights(words.size());
  for (size_t i = 0; i < words.size(); ++i) weights[i] = 1.0 / (i + 10.0);
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::uniform_int_distribution<int> roll(0, 99);
  std::string text;
  text.reserve(bytes + 64);
  int in_sentence = 0;
  while (text.size() < bytes) {
    std::string w = words[pick(rng)];
    if (in_sentence == 0) {
      w[0] = static_cast<char>(w[0] - 'a' + 'A');
    } else {
      text += ' ';
    }
    text += w;
    const int r = roll(rng);
    if (r < 3) {
      text += ' ';
      text += std::to_string(roll(rng) * 37 + 1);
    }
    if (r >= 3 && r < 10) text += ',';
    if (++in_sentence > 8 && r > 80) {
      text += roll(rng) < 10 ? '?' : '.';
      text += roll(rng) < 15 ? "\n\n" : " ";
      in_sentence = 0;
    }
  }
  return text;
}

void bench(const char* label, const std::string& path, const std::string& text, int reps) {
  auto tok = og::Tokenizer::from_path(path);
  const double mb = static_cast<double>(text.size()) / 1e6;
  auto t0 = Clock::now();
  std::vector<int32_t> ids = tok->encode(text, false, false);
  const double cold = seconds_since(t0);
  double best_enc = 1e30, best_dec = 1e30;
  std::string back;
  for (int r = 0; r < reps; ++r) {
    t0 = Clock::now();
    ids = tok->encode(text, false, false);
    best_enc = std::min(best_enc, seconds_since(t0));
    t0 = Clock::now();
    back = tok->decode(ids);
    best_dec = std::min(best_dec, seconds_since(t0));
  }
  std::printf("%-34s %-44s encode %7.1f MB/s (first pass %6.1f MB/s)  decode %7.1f MB/s  %.2f bytes/token%s\n",
              label, tok->kind().c_str(), mb / best_enc, mb / cold, mb / best_dec,
              static_cast<double>(text.size()) / static_cast<double>(ids.size()),
              back == text ? "" : "  (decode differs from input)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const double mb = argc > 1 ? std::atof(argv[1]) : 4.0;
    const std::string text = make_text(static_cast<size_t>(mb * 1e6));
    const std::string d = std::string(OG_TESTDATA_DIR);
    std::printf("text: %.2f MB of English-like text, one thread, best of 3\n", text.size() / 1e6);
    bench("byte-level BPE (Llama 3.2)", d + "/vocab/llama3.2-bpe/tokenizer.json", text, 3);
    bench("byte-level BPE (GPT-2 GGUF)", d + "/vocab/ggml-vocab-gpt-2.gguf", text, 3);
    bench("SentencePiece BPE (Llama 2 GGUF)", d + "/vocab/ggml-vocab-llama-spm.gguf", text, 3);
    bench("SentencePiece (Llama 2 .model)", d + "/vocab/llama2-spm/tokenizer.model", text, 3);
  } catch (const og::Error& e) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
