// Conformance: every vocabulary in testdata/vocab with .inp/.out files encodes
// each input (without BOS / special tokens) to exactly the expected ids.
//
// Vocabularies with .inp/.out but NO vocabulary file of any kind here, so they
// cannot be tested: qwen2 and deepseek-r1-qwen (GGUF >= 4 MiB, left out of the
// snapshot; no tokenizer.json either), command-r (same), chameleon and
// roberta-bpe (no vocabulary upstream in the snapshot). See vocab/SOURCES.md.
// llama-bpe has no GGUF either; it is tested through llama3.2-bpe/ (its HF
// tokenizer.json, and encoder.json + vocab.bpe with the llama-bpe regex).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "format/gguf.h"
#include "tokenizer/loaders.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

const std::string kVocab = std::string(OG_TESTDATA_DIR) + "/vocab/";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing test data " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// llama.cpp test format: inputs separated by "\n__ggml_vocab_test__\n" (the
// last one is followed by it too); one line of space-separated ids per input.
std::vector<Case> load_cases(const std::string& base) {
  const std::string inp = slurp(kVocab + base + ".inp");
  const std::string out = slurp(kVocab + base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t at = 0; at < inp.size();) {
    const size_t p = inp.find(sep, at);
    if (p == std::string::npos) break;
    cases.push_back({inp.substr(at, p - at), {}});
    at = p + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line) && i < cases.size()) {
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) cases[i].ids.push_back(id);
    ++i;
  }
  EXPECT_EQ(i, cases.size()) << base << ": .out has " << i << " lines for " << cases.size() << " inputs";
  return cases;
}

std::string show(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t id : v) s += std::to_string(id) + " ";
  return s;
}

void check(const Tokenizer& tok, const std::string& base) {
  const std::vector<Case> cases = load_cases(base);
  ASSERT_EQ(cases.size(), 46u) << base;
  int bad = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = tok.encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
    if (got != cases[i].ids) ++bad;
    EXPECT_EQ(show(got), show(cases[i].ids)) << base << " case " << i << " text [" << cases[i].text << "]";
  }
  EXPECT_EQ(bad, 0) << base << " (" << tok.kind() << ")";
}

void check_gguf(const std::string& name) {
  const std::string path = kVocab + "ggml-vocab-" + name + ".gguf";
  auto tok = Tokenizer::from_path(path);
  check(*tok, "ggml-vocab-" + name + ".gguf");
}

TEST(Conformance, GgufBertBge) { check_gguf("bert-bge"); }
TEST(Conformance, GgufDeepseekCoder) { check_gguf("deepseek-coder"); }
TEST(Conformance, GgufDeepseekLlm) { check_gguf("deepseek-llm"); }
TEST(Conformance, GgufFalcon) { check_gguf("falcon"); }
TEST(Conformance, GgufGpt2) { check_gguf("gpt-2"); }
TEST(Conformance, GgufLlamaSpm) { check_gguf("llama-spm"); }
TEST(Conformance, GgufMpt) { check_gguf("mpt"); }
TEST(Conformance, GgufPhi3) { check_gguf("phi-3"); }
TEST(Conformance, GgufRefact) { check_gguf("refact"); }
TEST(Conformance, GgufStarcoder) { check_gguf("starcoder"); }

TEST(Conformance, LlamaBpeTokenizerJson) {
  auto tok = Tokenizer::from_path(kVocab + "llama3.2-bpe/tokenizer.json");
  check(*tok, "ggml-vocab-llama-bpe.gguf");
}

TEST(Conformance, LlamaBpeEncoderJsonVocabBpe) {
  auto tok = tok::load_vocab_merges(kVocab + "llama3.2-bpe/encoder.json", kVocab + "llama3.2-bpe/vocab.bpe", "llama-bpe");
  check(*tok, "ggml-vocab-llama-bpe.gguf");
}

TEST(Conformance, LlamaSpmSentencePieceModel) {
  auto tok = Tokenizer::from_path(kVocab + "llama2-spm/tokenizer.model");
  check(*tok, "ggml-vocab-llama-spm.gguf");
}

}  // namespace
}  // namespace og
