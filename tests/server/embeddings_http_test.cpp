// POST /v1/embeddings over a real server and a synthetic Qwen3-Embedding-style
// model (last-token pooling, the stories vocabulary): every input form of
// OpenAI's request, base64 and dimensions, usage, the route without /v1;
// bad inputs and a model that does not embed are 400s naming the field; a
// model that only embeds answers the generation routes 400.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/embedder.h"
#include "server_fixture.h"
#include "synth/synth.h"
#include "temp_dir.h"

namespace og::server::test {
namespace {

using json = nlohmann::json;

class EmbeddingsHttp : public ServerFixture {
 protected:
  void SetUp() override {
    const std::string path = dir_.path("qwen3-embed.gguf");
    synth::write_gguf(synth::tiny_embedding_spec(synth::Family::kQwen3), path);
    m_ = Model::load(path);
    embedder_ = std::make_unique<Embedder>(*m_);
    model_.embedder = embedder_.get();
  }
  // POSTs body to path; returns (status, parsed body).
  std::pair<int, json> post(const std::string& body, const std::string& path = "/v1/embeddings") {
    httplib::Client c = client();
    auto r = c.Post(path, body, "application/json");
    EXPECT_TRUE(r) << "no response";
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::vector<float> vec(const json& j, size_t i = 0) { return j["data"][i]["embedding"].get<std::vector<float>>(); }
  void expect_400(const std::string& body, const std::string& param, const std::string& text) {
    auto [status, j] = post(body);
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(j["error"]["param"], param) << body << " -> " << j.dump();
    EXPECT_NE(j["error"]["message"].get<std::string>().find(text), std::string::npos) << j.dump();
  }

  og::test::TempDir dir_;
  std::unique_ptr<Model> m_;
  std::unique_ptr<Embedder> embedder_;
};

double norm2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

std::vector<float> from_base64(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string bytes;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    const int a = val(s[i]), b = val(s[i + 1]), c = val(s[i + 2]), d = val(s[i + 3]);
    bytes += static_cast<char>((a << 2) | (b >> 4));
    if (s[i + 2] != '=') bytes += static_cast<char>(((b & 15) << 4) | (c >> 2));
    if (s[i + 3] != '=') bytes += static_cast<char>(((c & 3) << 6) | d);
  }
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

TEST_F(EmbeddingsHttp, EveryInputForm) {
  start();
  auto [s1, one] = post(R"({"input": "Once upon a time", "model": "stories"})");
  ASSERT_EQ(s1, 200) << one.dump();
  EXPECT_EQ(one["object"], "list");
  EXPECT_EQ(one["model"], "stories");
  EXPECT_EQ(one["data"][0]["object"], "embedding");
  EXPECT_EQ(one["data"][0]["index"], 0);
  const std::vector<float> a = vec(one);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NEAR(norm2(a), 1.0, 1e-5);
  const std::vector<int32_t> ids = tok_->encode("Once upon a time", true, false);
  EXPECT_EQ(one["usage"]["prompt_tokens"], ids.size());
  EXPECT_EQ(one["usage"]["total_tokens"], ids.size());

  auto [s2, two] = post(R"({"input": ["Once upon a time", "The cat sat"]})");
  ASSERT_EQ(s2, 200);
  ASSERT_EQ(two["data"].size(), 2u);
  EXPECT_EQ(two["data"][1]["index"], 1);
  EXPECT_EQ(vec(two, 0), a);  // batched with another input: the same vector

  auto [s3, by_ids] = post(json{{"input", ids}}.dump());
  ASSERT_EQ(s3, 200);
  EXPECT_EQ(vec(by_ids), a);
  auto [s4, lists] = post(json{{"input", {ids, std::vector<int32_t>{5, 6, 7}}}}.dump());
  ASSERT_EQ(s4, 200);
  EXPECT_EQ(lists["data"].size(), 2u);
  EXPECT_EQ(lists["usage"]["prompt_tokens"], ids.size() + 3);

  auto [s5, no_v1] = post(R"({"input": "Once upon a time"})", "/embeddings");
  ASSERT_EQ(s5, 200);
  EXPECT_EQ(vec(no_v1), a);
}

TEST_F(EmbeddingsHttp, Base64AndDimensions) {
  start();
  auto [s, f] = post(R"({"input": "hello there"})");
  ASSERT_EQ(s, 200);
  const std::vector<float> full = vec(f);
  auto [sb, b] = post(R"({"input": "hello there", "encoding_format": "base64"})");
  ASSERT_EQ(sb, 200);
  ASSERT_TRUE(b["data"][0]["embedding"].is_string());
  EXPECT_EQ(from_base64(b["data"][0]["embedding"].get<std::string>()), full);

  auto [sd, d] = post(R"({"input": "hello there", "dimensions": 16})");
  ASSERT_EQ(sd, 200);
  const std::vector<float> cut = vec(d);
  ASSERT_EQ(cut.size(), 16u);
  EXPECT_NEAR(norm2(cut), 1.0, 1e-5);
  const std::vector<float> prefix(full.begin(), full.begin() + 16);
  const double n = norm2(prefix);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(cut[i], prefix[i] / n, 1e-5);
}

TEST_F(EmbeddingsHttp, BadInputsAre400s) {
  start();
  expect_400(R"({})", "input", "'input' is required");
  expect_400(R"({"input": ""})", "input", "empty string");
  expect_400(R"({"input": []})", "input", "empty list");
  expect_400(R"({"input": ["a", 3]})", "input", "mixes");
  expect_400(R"({"input": [[1, 2], []]})", "input", "empty list of token ids");
  expect_400(R"({"input": [1, 2.5]})", "input", "token ids");
  expect_400(R"({"input": [1, -2]})", "input", "out of range");
  expect_400(R"({"input": [1, 100000]})", "input", "token id 100000 is out of range [0, ");
  expect_400(R"({"input": {"text": "a"}})", "input", "must be a string");
  expect_400(R"({"input": "a", "encoding_format": "int8"})", "encoding_format", "\"float\" or \"base64\"");
  expect_400(R"({"input": "a", "dimensions": 0})", "dimensions", "positive integer");
  expect_400(R"({"input": "a", "dimensions": 65})", "dimensions", "more than the model's embedding width 64");
  {  // another model: 404 as OpenAI answers it
    auto [st, e] = post(R"({"input": "a", "model": "other"})");
    EXPECT_EQ(st, 404) << e.dump();
    EXPECT_EQ(e["error"]["code"], "model_not_found") << e.dump();
    EXPECT_EQ(e["error"]["param"], "model") << e.dump();
    EXPECT_NE(e["error"]["message"].get<std::string>().find("does not exist or you do not have access"),
              std::string::npos)
        << e.dump();
  }
  auto [s, j] = post(R"({"input": )");
  EXPECT_EQ(s, 400);
  std::vector<int32_t> too_long(3000, 5);  // the tiny model's context is 2048
  expect_400(json{{"input", too_long}}.dump(), "input", "more than the model's context");
}

TEST_F(EmbeddingsHttp, AModelThatDoesNotEmbedIs400) {
  model_.embedder = nullptr;
  start();
  auto [s, j] = post(R"({"input": "hello"})");
  EXPECT_EQ(s, 400);
  EXPECT_EQ(j["error"]["code"], "model_not_embedding") << j.dump();
}

TEST_F(EmbeddingsHttp, AnEmbeddingOnlyModelRefusesGeneration) {
  model_.generates = false;
  start();
  auto [s, j] = post(R"({"prompt": "hello", "max_tokens": 2})", "/v1/completions");
  EXPECT_EQ(s, 400);
  EXPECT_EQ(j["error"]["code"], "model_not_generative") << j.dump();
  auto [s2, j2] = post(R"({"input": "hello"})");
  EXPECT_EQ(s2, 200);
}

}  // namespace
}  // namespace og::server::test
