// `offgraph embed` end to end on og-synth's embedding models (written by the
// og-synth binary with --embedding): JSON in OpenAI's shape, plain floats,
// inputs from arguments, stdin and --file, --dimensions and --embd-normalize;
// `inspect` shows the embedding facts; bad usage and inputs give one clear
// line and a non-zero exit; a bidirectional model refuses to generate;
// encoders (bert, nomic-bert) embed alike from GGUF, HF and export.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include <httplib.h>

#include "e2e_util.h"
#include "serve_util.h"

namespace og::e2e {
namespace {

// An og-synth embedding model (gguf or hf) of `family`, written once.
std::string embed_model(const std::string& family, bool hf) {
  const std::string out = scratch_dir() + "/embed-" + family + (hf ? "-hf" : ".gguf");
  if (!std::filesystem::exists(out)) {
    const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth";
    const std::string cmd = synth + " --family " + family + " --embedding --format " + (hf ? "hf" : "gguf") +
                            " --out " + out + " >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  return out;
}

std::vector<std::vector<double>> plain_vectors(const std::string& out) {
  std::vector<std::vector<double>> v;
  for (const std::string& line : lines(out)) {
    std::istringstream in(line);
    std::vector<double> row;
    for (double x; in >> x;) row.push_back(x);
    v.push_back(row);
  }
  return v;
}

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

TEST(Embed, JsonInTheOpenAiShape) {
  const std::string m = embed_model("qwen3", false);
  const Proc p = offgraph({"embed", "--model", m, "Once upon a time", "The cat sat"});
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][0]["embedding"].size(), 64u);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 4);
  EXPECT_EQ(j["model"], "embed-qwen3.gguf");
}

TEST(Embed, EncodersFromGgufHfAndExportAgree) {
  // bert (cls pooling) and nomic-bert (mean): og-synth's GGUF, its HF
  // checkpoint (WordPiece tokenizer.json) and the GGUF export of that give
  // the same unit vectors; inspect names the encoder; generation is refused.
  for (const std::string family : {"bert", "nomic-bert"}) {
    const std::string g = embed_model(family, false), h = embed_model(family, true);
    const std::string exported = scratch_dir() + "/embed-" + family + "-export.gguf";
    std::filesystem::remove(exported);
    const Proc e = offgraph({"export", "--model", h, "--out", exported, "--dtype", "f32", "--quiet"});
    ASSERT_EQ(e.code, 0) << e.err;
    std::vector<std::vector<double>> first;
    for (const std::string& m : {g, h, exported}) {
      const Proc p = offgraph({"embed", "--model", m, "--output-format", "plain", "Once upon a time", "A dog"});
      ASSERT_EQ(p.code, 0) << m << ": " << p.err;
      const auto v = plain_vectors(p.out);
      ASSERT_EQ(v.size(), 2u) << m;
      EXPECT_EQ(v[0].size(), 64u);
      EXPECT_NEAR(norm2(v[1]), 1.0, 1e-6) << m;
      if (first.empty()) first = v;
      for (size_t k = 0; k < v.size(); ++k)
        for (size_t i = 0; i < v[k].size(); ++i) EXPECT_NEAR(v[k][i], first[k][i], 1e-6) << m;
    }
    const Proc info = offgraph({"inspect", "--model", g});
    ASSERT_EQ(info.code, 0) << info.err;
    EXPECT_NE(info.out.find(family == "bert" ? "cls" : "mean"), std::string::npos) << info.out;
    const Proc run = offgraph({"run", "--model", g, "--prompt", "hello", "--max-new-tokens", "2"});
    EXPECT_NE(run.code, 0);
    EXPECT_NE(run.err.find("cannot generate"), std::string::npos) << run.err;
  }
}

// An encoder behind `serve`: POST /v1/embeddings gives the vectors `offgraph
// embed` gives (batched inputs, token-id inputs), and a chat request is a 4xx.
TEST(Embed, ServeEncoderEqualsTheCommand) {
  const std::string m = embed_model("bert", false);
  const Proc p = offgraph({"embed", "--model", m, "Once upon a time", "A dog"});
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json want = nlohmann::json::parse(p.out);
  ServeProc s({"--model", m});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/embeddings", R"({"input": ["Once upon a time", "A dog"]})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const nlohmann::json got = nlohmann::json::parse(r->body);
  ASSERT_EQ(got["data"].size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(got["data"][k]["embedding"].size(), want["data"][k]["embedding"].size());
    for (size_t i = 0; i < want["data"][k]["embedding"].size(); ++i)
      EXPECT_NEAR(got["data"][k]["embedding"][i].get<double>(), want["data"][k]["embedding"][i].get<double>(), 1e-6);
  }
  EXPECT_EQ(got["usage"]["prompt_tokens"], want["usage"]["prompt_tokens"]);
  r = c.Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_GE(r->status, 400) << r->body;
  EXPECT_LT(r->status, 500) << r->body;
}

TEST(Embed, PlainFromArgsStdinAndFileAgree) {
  for (const std::string family : {"qwen3", "gemma3"}) {
    const std::string m = embed_model(family, false);
    const Proc args = offgraph({"embed", "--model", m, "--output-format", "plain", "Once upon a time", "A dog"});
    ASSERT_EQ(args.code, 0) << args.err;
    const Proc in = offgraph({"embed", "--model", m, "--output-format", "plain"}, "Once upon a time\nA dog\n");
    ASSERT_EQ(in.code, 0) << in.err;
    const std::string file = scratch_dir() + "/inputs.txt";
    std::ofstream(file) << "Once upon a time\r\nA dog";
    const Proc f = offgraph({"embed", "--model", m, "--output-format", "plain", "--file", file});
    ASSERT_EQ(f.code, 0) << f.err;
    EXPECT_EQ(args.out, in.out);
    EXPECT_EQ(args.out, f.out);
    const auto v = plain_vectors(args.out);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].size(), 64u);
    EXPECT_NEAR(norm2(v[0]), 1.0, 1e-6) << family;
  }
}

TEST(Embed, HfDirectoryAndItsExportAgree) {
  for (const std::string family : {"qwen3", "gemma3"}) {
    const std::string hf = embed_model(family, true), gguf = scratch_dir() + "/embed-export-" + family + ".gguf";
    std::filesystem::remove(gguf);
    const Proc e = offgraph({"export", "--model", hf, "--out", gguf, "--dtype", "f32", "--quiet"});
    ASSERT_EQ(e.code, 0) << e.err;
    const Proc a = offgraph({"embed", "--model", hf, "--output-format", "plain", "Once upon a time"});
    const Proc b = offgraph({"embed", "--model", gguf, "--output-format", "plain", "Once upon a time"});
    ASSERT_EQ(a.code, 0) << a.err;
    ASSERT_EQ(b.code, 0) << b.err;
    const auto va = plain_vectors(a.out), vb = plain_vectors(b.out);
    ASSERT_EQ(va.size(), 1u);
    ASSERT_EQ(vb.size(), 1u);
    ASSERT_EQ(va[0].size(), vb[0].size());
    for (size_t i = 0; i < va[0].size(); ++i) EXPECT_NEAR(va[0][i], vb[0][i], 1e-5) << family << " value " << i;
  }
}

TEST(Embed, DimensionsAndNormalisation) {
  const std::string m = embed_model("qwen3", false);
  const Proc full = offgraph({"embed", "--model", m, "--output-format", "plain", "--embd-normalize", "-1", "hello"});
  const Proc cut = offgraph({"embed", "--model", m, "--output-format", "plain", "--dimensions", "8", "hello"});
  ASSERT_EQ(full.code, 0) << full.err;
  ASSERT_EQ(cut.code, 0) << cut.err;
  const auto raw = plain_vectors(full.out)[0], c = plain_vectors(cut.out)[0];
  ASSERT_EQ(c.size(), 8u);
  const double n = norm2(std::vector<double>(raw.begin(), raw.begin() + 8));
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(c[i], raw[i] / n, 1e-6);
}

TEST(Embed, PoolingNoneGivesOneVectorPerToken) {
  const std::string m = scratch_dir() + "/embed-none.gguf";
  ASSERT_EQ(std::system((std::string(OG_BINARY_DIR) + "/og-synth --family qwen3 --pooling none --format gguf --out " +
                         m + " >/dev/null").c_str()), 0);
  const Proc t = offgraph({"tokenize", "--model", m, "Once upon a time"});
  ASSERT_EQ(t.code, 0) << t.err;
  const size_t n_tokens = plain_vectors(t.out)[0].size();
  const Proc p = offgraph({"embed", "--model", m, "--output-format", "plain", "Once upon a time"});
  ASSERT_EQ(p.code, 0) << p.err;
  const auto v = plain_vectors(p.out);
  EXPECT_EQ(v.size(), n_tokens);
  for (const auto& row : v) EXPECT_NEAR(norm2(row), 1.0, 1e-6);
  const Proc j = offgraph({"embed", "--model", m, "Once upon a time"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["data"][0]["embedding"].size(), n_tokens);
}

TEST(Embed, InspectShowsTheEmbeddingFacts) {
  const Proc p = offgraph({"inspect", "--model", embed_model("gemma3", false)});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("pooling=mean"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("bidirectional"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("dense=64->256 dense=256->64"), std::string::npos) << p.out;
}

TEST(Embed, BadUsageAndInputs) {
  const std::string m = embed_model("qwen3", false);
  Proc p = offgraph({"embed", "hello"});
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("--model is required"), std::string::npos) << p.err;
  p = offgraph({"embed", "--model", m, "--dimensions", "65", "hello"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("more than the model's embedding width 64"), std::string::npos) << p.err;
  p = offgraph({"embed", "--model", m}, "one\n\nthree\n");
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("line 2 is empty"), std::string::npos) << p.err;
  p = offgraph({"embed", "--model", m, "--file", scratch_dir() + "/no-such-file"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("no such file"), std::string::npos) << p.err;
  p = offgraph({"embed", "--model", m, "--embd-normalize", "-3", "x"});
  EXPECT_EQ(p.code, 2) << p.err;
  // A generative model is not an embedding model.
  const std::string gen = scratch_dir() + "/gen-qwen3.gguf";
  ASSERT_EQ(std::system((std::string(OG_BINARY_DIR) + "/og-synth --family qwen3 --format gguf --out " + gen +
                         " >/dev/null").c_str()), 0);
  p = offgraph({"embed", "--model", gen, "hello"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("not an embedding model"), std::string::npos) << p.err;
  // A bidirectional model cannot generate.
  p = offgraph({"run", "--model", embed_model("gemma3", false), "--prompt", "hi", "--max-new-tokens", "2"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("cannot generate"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace og::e2e
