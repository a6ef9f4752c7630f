// Ollama's REST API (/api/...) over a real server and the echoing scheduler:
// the shapes of version, tags, ps and show; chat and generate whole and as
// NDJSON (done, done_reason, timings in nanoseconds, context continuation,
// raw prompts, the empty "load" request); Ollama's options reaching the
// scheduler; format through the grammar engine; every bad input a 4xx with
// Ollama's {"error": "text"} naming the Ollama field; the model-store routes;
// the same key, CORS, access log and metrics as the OpenAI routes; embed and
// embeddings equal to /v1/embeddings on a synthetic embedding model.
#include <gtest/gtest.h>

#include <sstream>

#include "runtime/embedder.h"
#include "server/ollama_request.h"
#include "server_fixture.h"
#include "synth/synth.h"
#include "temp_dir.h"

namespace og::server::test {
namespace {

using json = nlohmann::json;

class OllamaHttp : public ServerFixture {
 protected:
  void start_ollama(HttpOptions opts = {}) {
    opts.log = [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(l);
    };
    start(opts, /*load=*/false);
    model_.facts.path = "/models/stories.gguf";
    model_.facts.format = "gguf";
    model_.facts.family = "llama";
    model_.facts.quantization = "F32";
    model_.facts.digest = std::string(64, 'a');
    model_.facts.size = 1185376;
    model_.facts.parameters = 292352;
    model_.facts.modified = 1700000000;
    server_->set_model(model_, *sched_);
  }
  std::pair<int, json> post(const std::string& path, const std::string& body) {
    httplib::Client c = client();
    auto r = c.Post(path, body, "application/json");
    EXPECT_TRUE(r) << "no response for " << path;
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::pair<int, json> get(const std::string& path) {
    httplib::Client c = client();
    auto r = c.Get(path);
    EXPECT_TRUE(r);
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  // The NDJSON lines of a streamed answer.
  std::vector<json> post_lines(const std::string& path, const std::string& body) {
    httplib::Client c = client();
    auto r = c.Post(path, body, "application/json");
    EXPECT_TRUE(r);
    std::vector<json> out;
    if (!r) return out;
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/x-ndjson");
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
  // A 4xx with Ollama's error shape whose text holds `text`.
  void expect_error(const std::string& path, const std::string& body, int status, const std::string& text) {
    auto [s, j] = post(path, body);
    EXPECT_EQ(s, status) << body << " -> " << j.dump();
    ASSERT_TRUE(j.is_object() && j.contains("error") && j["error"].is_string()) << body << " -> " << j.dump();
    EXPECT_NE(j["error"].get<std::string>().find(text), std::string::npos) << body << " -> " << j.dump();
  }
  bool log_has(const std::string& text) {
    std::lock_guard<std::mutex> lock(log_mu_);
    for (const auto& l : log_)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
  static void expect_timings(const json& j) {
    for (const char* k : {"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count",
                          "eval_duration"})
      EXPECT_TRUE(j.contains(k) && j[k].is_number_integer()) << k << " in " << j.dump();
  }

  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(OllamaHttp, VersionTagsPsShow) {
  start_ollama();
  auto [sv, v] = get("/api/version");
  ASSERT_EQ(sv, 200);
  EXPECT_TRUE(v["version"].is_string());
  auto [st, tags] = get("/api/tags");
  ASSERT_EQ(st, 200) << tags.dump();
  ASSERT_EQ(tags["models"].size(), 1u);
  const json& t = tags["models"][0];
  EXPECT_EQ(t["name"], "stories:latest");
  EXPECT_EQ(t["model"], "stories:latest");
  EXPECT_EQ(t["size"], 1185376);
  EXPECT_EQ(t["digest"], std::string(64, 'a'));
  EXPECT_EQ(t["modified_at"], "2023-11-14T22:13:20.000000000Z");
  EXPECT_EQ(t["details"]["format"], "gguf");
  EXPECT_EQ(t["details"]["family"], "llama");
  EXPECT_EQ(t["details"]["families"], json::array({"llama"}));
  EXPECT_EQ(t["details"]["parameter_size"], "292K");
  EXPECT_EQ(t["details"]["quantization_level"], "F32");
  auto [sp, ps] = get("/api/ps");
  ASSERT_EQ(sp, 200);
  EXPECT_EQ(ps["models"][0]["name"], "stories:latest");
  EXPECT_EQ(ps["models"][0]["context_length"], 256);
  EXPECT_TRUE(ps["models"][0]["expires_at"].is_string());
  EXPECT_EQ(ps["models"][0]["size_vram"], 0);

  auto [ss, show] = post("/api/show", R"({"model": "stories"})");
  ASSERT_EQ(ss, 200) << show.dump();
  EXPECT_EQ(show["capabilities"], json::array({"completion"}));  // chatml built-in: no tools, no reasoning
  EXPECT_EQ(show["details"]["family"], "llama");
  EXPECT_EQ(show["model_info"]["general.architecture"], "llama");
  EXPECT_EQ(show["model_info"]["general.parameter_count"], 292352);
  EXPECT_NE(show["template"].get<std::string>().find("chatml"), std::string::npos);
  EXPECT_NE(show["parameters"].get<std::string>().find("num_ctx"), std::string::npos);
  EXPECT_NE(show["modelfile"].get<std::string>().find("FROM /models/stories.gguf"), std::string::npos);
  auto [sn, by_name] = post("/api/show", R"({"name": "stories:latest"})");  // older clients' field
  EXPECT_EQ(sn, 200);
  expect_error("/api/show", R"({"model": "llama3"})", 404, "model 'llama3' not found");
  expect_error("/api/show", R"({})", 400, "'model' is required");
}

TEST_F(OllamaHttp, ModelNamesWithTags) {
  EXPECT_TRUE(ollama_model_matches("stories", "stories"));
  EXPECT_TRUE(ollama_model_matches("stories:latest", "stories"));
  EXPECT_TRUE(ollama_model_matches("stories:q8", "stories"));
  EXPECT_FALSE(ollama_model_matches("stories2", "stories"));
  EXPECT_FALSE(ollama_model_matches("stories:", "stories"));
  EXPECT_FALSE(ollama_model_matches("stor", "stories"));
  EXPECT_TRUE(ollama_model_matches("qwen:7b", "qwen:7b"));
  EXPECT_FALSE(ollama_model_matches("qwen:7b:x", "qwen:7b"));
}

TEST_F(OllamaHttp, ChatWholeAndStreamed) {
  start_ollama();
  const std::string body = R"({"model": "stories:latest", "messages": [{"role": "user", "content": "Once upon a time"}],
                               "stream": false, "options": {"temperature": 0, "num_predict": 6}})";
  auto [s, whole] = post("/api/chat", body);
  ASSERT_EQ(s, 200) << whole.dump();
  EXPECT_EQ(whole["model"], "stories:latest");
  EXPECT_EQ(whole["message"]["role"], "assistant");
  EXPECT_FALSE(whole["message"]["content"].get<std::string>().empty());
  EXPECT_EQ(whole["done"], true);
  EXPECT_EQ(whole["done_reason"], "length");
  EXPECT_EQ(whole["eval_count"], 6);
  EXPECT_TRUE(whole["created_at"].is_string());
  expect_timings(whole);
  EXPECT_FALSE(whole.contains("context"));  // chat has none
  EXPECT_EQ(sched_->last_options().max_new_tokens, 6);

  json streamed_body = json::parse(body);
  streamed_body.erase("stream");  // Ollama's default: streamed
  const std::vector<json> lines = post_lines("/api/chat", streamed_body.dump());
  ASSERT_GE(lines.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    text += lines[i]["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, whole["message"]["content"]);
  EXPECT_EQ(lines.back()["done"], true);
  EXPECT_EQ(lines.back()["done_reason"], "length");
  EXPECT_EQ(lines.back()["message"]["content"], "");
  expect_timings(lines.back());
  EXPECT_TRUE(log_has("POST /api/chat 200"));
  EXPECT_TRUE(log_has("generated=6"));
}

TEST_F(OllamaHttp, OptionsReachTheScheduler) {
  start_ollama();
  auto [s, j] = post("/api/chat", R"({"model": "stories", "stream": false, "keep_alive": "5m",
      "messages": [{"role": "user", "content": "hi"}],
      "options": {"temperature": 0.5, "top_k": 7, "top_p": 0.9, "min_p": 0.05, "seed": 42, "num_predict": 3,
                  "stop": ["zzz"], "repeat_penalty": 1.2, "presence_penalty": 0.5, "frequency_penalty": 0.25,
                  "num_ctx": 128, "num_thread": 4, "mirostat": 0}})");
  ASSERT_EQ(s, 200) << j.dump();
  const RequestOptions o = sched_->last_options();
  EXPECT_DOUBLE_EQ(o.sampler.temperature, 0.5);
  EXPECT_EQ(o.sampler.top_k, 7);
  EXPECT_DOUBLE_EQ(o.sampler.top_p, 0.9);
  EXPECT_DOUBLE_EQ(o.sampler.min_p, 0.05);
  EXPECT_EQ(o.sampler.seed, 42u);
  EXPECT_EQ(o.max_new_tokens, 3);
  EXPECT_EQ(o.stop_strings, std::vector<std::string>{"zzz"});
  EXPECT_DOUBLE_EQ(o.sampler.repeat_penalty, 1.2);
  EXPECT_DOUBLE_EQ(o.sampler.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(o.sampler.frequency_penalty, 0.25);
  EXPECT_TRUE(log_has("ignoring request field 'options.num_thread'"));

  auto [sf, f] = post("/api/chat", R"({"model": "stories", "stream": false, "format": "json",
      "messages": [{"role": "user", "content": "hi"}], "options": {"num_predict": 2}})");
  EXPECT_EQ(sf, 200) << f.dump();
  EXPECT_TRUE(sched_->last_options().grammar.grammar != nullptr);
  auto [ss, sc] = post("/api/chat", R"({"model": "stories", "stream": false, "options": {"num_predict": 2},
      "format": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      "messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(ss, 200) << sc.dump();
  EXPECT_TRUE(sched_->last_options().grammar.grammar != nullptr);
}

TEST_F(OllamaHttp, GenerateRawContextAndLoad) {
  start_ollama();
  auto [s, j] = post("/api/generate", R"({"model": "stories", "prompt": "Once upon a time", "raw": true,
                                          "stream": false, "options": {"num_predict": 4}})");
  ASSERT_EQ(s, 200) << j.dump();
  EXPECT_FALSE(j["response"].get<std::string>().empty());
  EXPECT_EQ(j["done"], true);
  expect_timings(j);
  const std::vector<int32_t> first = tok_->encode("Once upon a time", true, false);
  EXPECT_EQ(sched_->last_options().prompt, first);  // raw: the text itself, no template
  ASSERT_TRUE(j["context"].is_array());
  const std::vector<int32_t> context = j["context"].get<std::vector<int32_t>>();
  EXPECT_EQ(std::vector<int32_t>(context.begin(), context.begin() + first.size()), first);

  json next = {{"model", "stories"}, {"prompt", " there was"}, {"raw", true}, {"stream", false},
               {"context", context}, {"options", {{"num_predict", 2}}}};
  auto [s2, j2] = post("/api/generate", next.dump());
  ASSERT_EQ(s2, 200) << j2.dump();
  std::vector<int32_t> want = context;
  for (int32_t id : tok_->encode(" there was", true, false))
    if (id != tok_->special().bos) want.push_back(id);
  EXPECT_EQ(sched_->last_options().prompt, want);  // continued, without a second BOS

  // Templated (not raw): the chat template's render of the prompt as a user message.
  auto [s3, j3] = post("/api/generate", R"({"model": "stories", "prompt": "Hi", "system": "Be brief",
                                            "stream": false, "options": {"num_predict": 1}})");
  ASSERT_EQ(s3, 200) << j3.dump();
  const std::string rendered = tok_->decode(sched_->last_options().prompt);
  EXPECT_NE(rendered.find("system\nBe brief"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("user\nHi"), std::string::npos) << rendered;

  // Without num_predict: the server's default, not OpenAI completions' 16.
  auto [s4, j4] = post("/api/generate", R"({"model": "stories", "prompt": "Once", "raw": true, "stream": false})");
  ASSERT_EQ(s4, 200);
  EXPECT_EQ(sched_->last_options().max_new_tokens, model_.default_max_tokens);

  const size_t submitted = sched_->submitted().size();
  auto [s5, load] = post("/api/generate", R"({"model": "stories", "stream": false})");
  ASSERT_EQ(s5, 200) << load.dump();
  EXPECT_EQ(load["done"], true);
  EXPECT_EQ(load["done_reason"], "load");
  EXPECT_EQ(load["response"], "");
  auto [s6, chat_load] = post("/api/chat", R"({"model": "stories", "messages": [], "stream": false})");
  ASSERT_EQ(s6, 200);
  EXPECT_EQ(chat_load["done_reason"], "load");
  EXPECT_EQ(sched_->submitted().size(), submitted);  // nothing was generated

  const std::vector<json> lines = post_lines("/api/generate", R"({"model": "stories", "prompt": "Once", "raw": true,
                                                                 "options": {"num_predict": 3}})");
  ASSERT_GE(lines.size(), 2u);
  EXPECT_TRUE(lines.front().contains("response"));
  EXPECT_EQ(lines.back()["done"], true);
  EXPECT_TRUE(lines.back()["context"].is_array());
}

TEST_F(OllamaHttp, BadInputsAreOllamaErrors) {
  start_ollama();
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  auto chat = [&](const std::string& extra) { return R"({"model": "stories", )" + msgs + extra + "}"; };
  expect_error("/api/chat", "{not json", 400, "not valid JSON");
  expect_error("/api/chat", R"({)" + msgs + "}", 400, "'model' is required");
  expect_error("/api/chat", R"({"model": "llama3", )" + msgs + "}", 404, "model 'llama3' not found");
  expect_error("/api/chat", R"({"model": "stories", "messages": [{"role": "user", "content": "x", "images": ["aGk="]}]})",
               400, "'messages[0].images': this model has no vision tower");
  expect_error("/api/chat", chat(R"(, "think": true)"), 400, "does not support thinking");
  expect_error("/api/chat", chat(R"(, "think": "max")"), 400, "'think' must be");
  expect_error("/api/chat", chat(R"(, "format": "yaml")"), 400, "'format'");
  expect_error("/api/chat", chat(R"(, "format": 3)"), 400, "'format' must be");
  expect_error("/api/chat", chat(R"(, "format": {"type": "object", "patternProperties": {"a": {}}})"), 400, "format");
  expect_error("/api/chat", chat(R"(, "options": {"num_predict": 0})"), 400, "'options.num_predict' is 0");
  expect_error("/api/chat", chat(R"(, "options": {"num_ctx": 100000})"), 400, "session limit of 256");
  expect_error("/api/chat", chat(R"(, "options": {"temperature": "hot"})"), 400, "'options.temperature'");
  expect_error("/api/chat", chat(R"(, "options": {"repeat_penalty": -1})"), 400, "'options.repeat_penalty'");
  // The bound and words of every edge (runtime/generation_limits.h), under Ollama's name.
  expect_error("/api/chat", chat(R"(, "options": {"temperature": 3})"), 400,
               "'options.temperature' is 3, outside [0, 2]");
  expect_error("/api/chat", chat(R"(, "options": {"num_predict": 1000})"), 400, "options.num_predict");
  expect_error("/api/chat", chat(R"(, "options": 5)"), 400, "'options' must be");
  expect_error("/api/chat", chat(R"(, "options": {"max_reasoning_tokens": -1})"), 400,
               "'options.max_reasoning_tokens'");
  expect_error("/api/chat", chat(R"(, "stream": "yes")"), 400, "'stream' must be a boolean");
  expect_error("/api/chat", R"({"model": "stories", "messages": [{"role": "wizard", "content": "x"}]})", 400, "role");
  expect_error("/api/generate", R"({"model": "stories", "prompt": "x", "template": "{{ .Prompt }}"})", 400,
               "'template'");
  expect_error("/api/generate", R"({"model": "stories", "prompt": "x", "images": ["aGk="]})", 400,
               "'images': this model has no vision tower");
  expect_error("/api/chat", R"({"model": "stories", "messages": [{"role": "user", "content": "x", "images": ["a@"]}]})",
               400, "'messages[0].images[0]' is not valid base64");
  expect_error("/api/generate", R"({"model": "stories", "prompt": "x", "images": "aGk="})", 400, "'images'");
  expect_error("/api/generate", R"({"model": "stories", "prompt": "x", "context": [1, -5]})", 400, "'context[1]'");
  expect_error("/api/generate", R"({"model": "stories", "prompt": "x", "context": "abc"})", 400, "'context' must be");
  expect_error("/api/generate", R"({"model": "stories", "prompt": "x", "suffix": "y"})", 400, "");  // no FIM tokens
  expect_error("/api/generate", R"({"model": "stories", "prompt": 5})", 400, "'prompt' must be a string");
  expect_error("/api/embed", R"({"model": "stories", "input": "x"})", 400, "not an embedding model");
  expect_error("/api/nope", R"({})", 404, "no route");
  httplib::Client c = client();
  auto r = c.Get("/api/chat");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_TRUE(json::parse(r->body)["error"].is_string()) << r->body;
}

TEST_F(OllamaHttp, ModelStoreRoutes) {
  start_ollama();
  auto [s, j] = post("/api/pull", R"({"model": "stories:latest", "stream": false})");
  EXPECT_EQ(s, 200);
  EXPECT_EQ(j["status"], "success");
  const std::vector<json> lines = post_lines("/api/pull", R"({"name": "stories"})");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["status"], "success");
  expect_error("/api/pull", R"({"model": "llama3"})", 404, "models are files given to `offgraph serve`");
  expect_error("/api/push", R"({"model": "stories"})", 400, "models are files given to `offgraph serve`");
  expect_error("/api/create", R"({"model": "x", "from": "stories"})", 400, "cannot create");
  expect_error("/api/copy", R"({"source": "stories", "destination": "y"})", 400, "cannot copy");
  httplib::Client c = client();
  auto r = c.Delete("/api/delete", R"({"model": "stories"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("cannot delete"), std::string::npos);
}

TEST_F(OllamaHttp, KeyCorsAndMetricsAsOpenAi) {
  HttpOptions o;
  o.api_keys = {"sekret"};
  o.cors_origins = {"https://app.example"};
  start_ollama(o);
  httplib::Client c = client();
  auto r = c.Get("/api/tags");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_TRUE(json::parse(r->body)["error"].is_string()) << r->body;
  httplib::Headers h = {{"Authorization", "Bearer sekret"}, {"Origin", "https://app.example"}};
  r = c.Get("/api/tags", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  r = c.Post("/api/chat", h, R"({"model": "stories", "stream": false, "messages": [{"role": "user", "content": "a"}],
                                  "options": {"num_predict": 2}})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("endpoint=\"chat\""), std::string::npos);
}

TEST_F(OllamaHttp, LimitsDrainAndClientGoneAsOpenAi) {
  HttpOptions o;
  o.max_in_flight = 1;
  start_ollama(o);
  const std::string body = R"({"model": "stories", "stream": false, "messages": [{"role": "user", "content": "a"}],
                               "options": {"num_predict": 2}})";
  sched_->hold();
  std::thread first([&] {
    auto [s, j] = post("/api/chat", body);
    EXPECT_EQ(s, 200) << j.dump();
  });
  // Up to 5 s, as the other server tests wait: 1 s was too short under a loaded
  // ctest -j2 (2 runs of 40 failed), and this request then took the slot.
  for (int i = 0; i < 500 && server_->in_flight() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server_->in_flight(), 1);
  expect_error("/api/chat", body, 429, "requests in flight");
  sched_->release();
  first.join();

  // A streamed reply the client stops reading is cancelled in the scheduler.
  {
    httplib::Client c = client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/api/chat";
    req.body = R"({"model": "stories", "messages": [{"role": "user", "content": "Once upon a time"}],
                   "options": {"num_predict": 200}})";
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };
    c.send(req);
  }
  for (int i = 0; i < 500 && sched_->cancelled() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(sched_->cancelled(), 1u);

  server_->drain();
  expect_error("/api/chat", body, 503, "shutting down");
  expect_error("/api/generate", R"({"model": "stories", "prompt": "x"})", 503, "shutting down");
}

class OllamaEmbedHttp : public OllamaHttp {
 protected:
  void SetUp() override {
    const std::string path = dir_.path("qwen3-embed.gguf");
    synth::write_gguf(synth::tiny_embedding_spec(synth::Family::kQwen3), path);
    m_ = Model::load(path);
    embedder_ = std::make_unique<Embedder>(*m_);
    model_.embedder = embedder_.get();
  }
  og::test::TempDir dir_;
  std::unique_ptr<Model> m_;
  std::unique_ptr<Embedder> embedder_;
};

TEST_F(OllamaEmbedHttp, EmbedAndEmbeddingsEqualV1) {
  start_ollama();
  auto [sv, v1] = post("/v1/embeddings", R"({"input": ["Once upon a time", "The cat sat"]})");
  ASSERT_EQ(sv, 200);
  auto [se, e] = post("/api/embed", R"({"model": "stories", "input": ["Once upon a time", "The cat sat"]})");
  ASSERT_EQ(se, 200) << e.dump();
  EXPECT_EQ(e["model"], "stories");
  ASSERT_EQ(e["embeddings"].size(), 2u);
  EXPECT_EQ(e["embeddings"][0], v1["data"][0]["embedding"]);
  EXPECT_EQ(e["embeddings"][1], v1["data"][1]["embedding"]);
  EXPECT_EQ(e["prompt_eval_count"], v1["usage"]["prompt_tokens"]);
  EXPECT_TRUE(e["total_duration"].is_number_integer());
  auto [s1, one] = post("/api/embed", R"({"model": "stories", "input": "Once upon a time"})");
  ASSERT_EQ(s1, 200);
  EXPECT_EQ(one["embeddings"][0], v1["data"][0]["embedding"]);
  auto [sl, legacy] = post("/api/embeddings", R"({"model": "stories", "prompt": "Once upon a time"})");
  ASSERT_EQ(sl, 200) << legacy.dump();
  EXPECT_EQ(legacy["embedding"], v1["data"][0]["embedding"]);
  auto [sd, d] = post("/api/embed", R"({"model": "stories", "input": "Once upon a time", "dimensions": 16})");
  ASSERT_EQ(sd, 200);
  EXPECT_EQ(d["embeddings"][0].size(), 16u);
  auto [sn, none] = post("/api/embed", R"({"model": "stories", "input": []})");
  ASSERT_EQ(sn, 200);
  EXPECT_EQ(none["embeddings"], json::array());

  // Past the context: cut with truncate (the default), refused without.
  std::string longer;
  for (int i = 0; i < 2000; ++i) longer += "the cat sat on the mat ";
  const json big = {{"model", "stories"}, {"input", longer}};
  auto [st, cut] = post("/api/embed", big.dump());
  EXPECT_EQ(st, 200) << cut.dump().substr(0, 300);
  json refuse = big;
  refuse["truncate"] = false;
  expect_error("/api/embed", refuse.dump(), 400, "send \"truncate\": true");
  expect_error("/api/embed", R"({"model": "stories", "input": [""]})", 400, "empty string");
  expect_error("/api/embed", R"({"model": "stories", "input": 7})", 400, "'input' must be");
  expect_error("/api/embed", R"({"model": "stories", "input": "a", "dimensions": 0})", 400, "'dimensions'");
  expect_error("/api/embed", R"({"model": "stories", "input": "a", "dimensions": 100000})", 400, "embedding width");
}

}  // namespace
}  // namespace og::server::test
