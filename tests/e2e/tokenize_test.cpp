// End to end: the built `offgraph tokenize` / `offgraph detokenize` commands on
// real vocabularies (stories260K GGUF / HF / tokenizer.model, vocabulary-only
// GGUF) and their answers to bad usage. Build the `offgraph` target first.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `offgraph ARGS` (ARGS already shell-quoted as needed), optionally with stdin text.
Result offgraph(const std::string& args, const std::string* stdin_text = nullptr) {
  static int counter = 0;
  std::string base = (std::filesystem::temp_directory_path() /
                      ("og_tok_e2e_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
                         .string();
  std::string in = base + ".in", out = base + ".out", err = base + ".err";
  std::string cmd = std::string(OG_BINARY_DIR) + "/offgraph " + args;
  if (stdin_text) {
    std::ofstream(in, std::ios::binary) << *stdin_text;
    cmd += " < " + in;
  } else {
    cmd += " < /dev/null";
  }
  cmd += " > " + out + " 2> " + err;
  int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

const std::string kData = OG_TESTDATA_DIR;
const std::string kGguf = quote(kData + "/models/stories260K/stories260K.gguf");
const std::string kHfDir = quote(kData + "/models/stories260K-hf");
const std::string kSpModel = quote(kData + "/models/stories260K/tok512.model");

// One line on stderr that names the command.
void expect_one_line_error(const Result& r, int rc, const std::string& mention) {
  EXPECT_EQ(r.rc, rc) << r.err;
  EXPECT_EQ(r.out, "");
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << r.err;
}

TEST(TokenizeCommand, BinaryExists) {
  ASSERT_TRUE(std::filesystem::exists(std::string(OG_BINARY_DIR) + "/offgraph"))
      << "build the offgraph target first";
}

TEST(TokenizeCommand, StoriesOnceUponATime) {
  for (const std::string& model : {kGguf, kHfDir}) {
    Result r = offgraph("tokenize --model " + model + " 'Once upon a time'");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, "1 403 407 261 378\n") << model;
  }
  Result r = offgraph("tokenize --model " + kHfDir + " --tokenizer " + kSpModel + " 'Once upon a time'");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  // Several words join with single spaces.
  r = offgraph("tokenize --model " + kGguf + " Once upon a time");
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
}

TEST(TokenizeCommand, ReadsStdinVerbatim) {
  std::string text = "Once upon a time";
  Result r = offgraph("tokenize --model " + kGguf, &text);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  std::string with_newline = text + "\n";
  r = offgraph("tokenize --model " + kGguf, &with_newline);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out, "1 403 407 261 378\n");  // the newline is text too
  EXPECT_EQ(r.out.rfind("1 403 407 261 378 ", 0), 0u) << r.out;
}

TEST(TokenizeCommand, FlagsNoBosPiecesJson) {
  Result r = offgraph("tokenize --no-bos --model " + kGguf + " 'Once upon a time'");
  EXPECT_EQ(r.out, "403 407 261 378\n");
  r = offgraph("tokenize --pieces --model " + kGguf + " 'Once upon a time'");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("1\t<s>\n403\t", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 5);
  r = offgraph("tokenize --json --model " + kGguf + " 'Once upon a time'");
  EXPECT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], nlohmann::json({1, 403, 407, 261, 378}));
  ASSERT_EQ(j["pieces"].size(), 5u);
  EXPECT_EQ(j["pieces"][0], "<s>");
}

TEST(TokenizeCommand, ParseSpecialOnlyWhenAsked) {
  Result plain = offgraph("tokenize --no-bos --model " + kGguf + " '</s>'");
  Result special = offgraph("tokenize --no-bos --parse-special --model " + kGguf + " '</s>'");
  EXPECT_EQ(special.rc, 0) << special.err;
  EXPECT_EQ(special.out, "2\n");
  EXPECT_EQ(plain.rc, 0) << plain.err;
  EXPECT_NE(plain.out, "2\n");
}

TEST(TokenizeCommand, VocabularyOnlyGguf) {
  // ggml-vocab-llama-spm.gguf holds no tensors; ids as in its .out file.
  Result r = offgraph("tokenize --no-bos --model " + quote(kData + "/vocab/ggml-vocab-llama-spm.gguf") +
                      " 'Hello world'");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "15043 3186\n");
  r = offgraph("detokenize --model " + quote(kData + "/vocab/ggml-vocab-llama-spm.gguf") + " 15043 3186");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world\n");
}

TEST(DetokenizeCommand, StoriesIds) {
  Result r = offgraph("detokenize --model " + kGguf + " 1 403 407 261 378");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Once upon a time\n");
  std::string ids = "[1, 403, 407,\n261, 378]\n";
  r = offgraph("detokenize --model " + kHfDir, &ids);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Once upon a time\n");
  r = offgraph("detokenize --special --model " + kGguf + " 1 403");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("<s>"), std::string::npos) << r.out;
}

TEST(TokenizeCommand, BadUsageExitsTwo) {
  expect_one_line_error(offgraph("tokenize --model " + kGguf + " --frobnicate hi"), 2, "--frobnicate");
  expect_one_line_error(offgraph("tokenize hi"), 2, "--model");
  expect_one_line_error(offgraph("tokenize --model"), 2, "--model");
  expect_one_line_error(offgraph("detokenize --model " + kGguf + " 1 abc"), 2, "abc");
  expect_one_line_error(offgraph("detokenize --model " + kGguf + " 1 -5"), 2, "-5");
  expect_one_line_error(offgraph("detokenize --model " + kGguf + " 1 512"), 2, "512");
  expect_one_line_error(offgraph("detokenize --model " + kGguf + " 99999999999999999999"), 2, "99999999999999999999");
  std::string junk = "1 2 x3";
  expect_one_line_error(offgraph("detokenize --model " + kGguf, &junk), 2, "x3");
  expect_one_line_error(offgraph("detokenize --pieces --model " + kGguf + " 1"), 2, "--pieces");
}

TEST(TokenizeCommand, BadFilesExitOne) {
  expect_one_line_error(offgraph("tokenize --model /nonexistent/model.gguf hi"), 1, "/nonexistent/model.gguf");
  std::string bad = (std::filesystem::temp_directory_path() / ("og_tok_bad_" + std::to_string(::getpid()) + ".gguf")).string();
  std::ofstream(bad) << "GGUF this is not a gguf file";
  expect_one_line_error(offgraph("tokenize --model " + quote(bad) + " hi"), 1, bad);
  expect_one_line_error(offgraph("detokenize --model " + quote(bad) + " 1"), 1, bad);
  std::remove(bad.c_str());
}

TEST(TokenizeCommand, HelpListsEveryFlag) {
  Result r = offgraph("tokenize --help");
  EXPECT_EQ(r.rc, 0);
  for (const char* f : {"--model", "--tokenizer", "--pieces", "--json", "--parse-special", "--no-bos", "--help"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
  r = offgraph("detokenize --help");
  EXPECT_EQ(r.rc, 0);
  for (const char* f : {"--model", "--tokenizer", "--special", "--help"}) EXPECT_NE(r.out.find(f), std::string::npos) << f;
  r = offgraph("--help");
  EXPECT_NE(r.out.find("tokenize"), std::string::npos);
  EXPECT_NE(r.out.find("detokenize"), std::string::npos);
}

}  // namespace
