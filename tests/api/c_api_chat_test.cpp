// og_session_chat (offgraph.h): chat with tools, tool results and structured
// output through liboffgraph.so, on scripted models (og-synth --script,
// docs/tools.md) under the real Qwen 3 template, which reasons first. A
// scripted model follows its chain while the grammar allows it and else
// writes the allowed token of lowest id, so a constrained answer is spelled
// byte by byte: the schemas pin every value (enums).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "offgraph/offgraph.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kTemplate = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/Qwen-Qwen3-0.6B.jinja";
const std::string kCall2 = "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

// Thinks, then calls get_weather and get_time (the second call one token of its own).
const json kToolScript = {
    {"tokens", json::array({{{"text", "<|im_start|>"}, {"special", true}},
                            {{"text", "<|im_end|>"}, {"special", true}},
                            {{"text", "<think>"}},
                            {{"text", "</think>"}},
                            {{"text", "<tool_call>"}},
                            {{"text", "</tool_call>"}},
                            {{"text", "\nThe user wants the weather.\n"}},
                            {{"text", "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"}},
                            {{"text", kCall2}}})},
    {"chains", json::array({json::array({"\n", "<think>", "\nThe user wants the weather.\n", "</think>", "\n\n",
                                         "<tool_call>",
                                         "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n",
                                         "</tool_call>", kCall2, "<|im_end|>"})})}};

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A scripted model, written once per build tree rather than once per test
// process: ctest runs every test in a process of its own, and og-synth takes
// seconds for the 128k-token vocabulary (many more in the sanitizer tree).
// The file's name carries a hash of the script, the template and og-synth's
// size and time, so a changed input writes a new file; it is written under a
// private name and renamed, so two tests running at once never see half a
// file. Fails the test when og-synth does.
std::string model_file(const std::string& name, const std::string& script_path) {
  const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth";
  std::error_code ec;
  const auto stamp = fs::last_write_time(synth, ec).time_since_epoch().count();
  const size_t key = std::hash<std::string>{}(read_all(script_path) + '\0' + read_all(kTemplate) + '\0' +
                                              std::to_string(fs::file_size(synth, ec)) + '/' + std::to_string(stamp));
  const fs::path dir = fs::path(OG_BINARY_DIR) / "tests" / "api-chat-models";
  fs::create_directories(dir, ec);
  const std::string out = (dir / (name + "-" + std::to_string(key) + ".gguf")).string();
  if (fs::exists(out)) return out;
  const std::string tmp = out + ".tmp" + std::to_string(::getpid());
  const std::string cmd = synth + " --family qwen3 --format gguf --out '" + tmp + "' --script '" + script_path +
                          "' --chat-template '" + kTemplate + "' > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::rename(tmp, out, ec);
  EXPECT_FALSE(ec) << ec.message();
  return out;
}

std::string reply_model() {
  return model_file("reply", std::string(OG_SOURCE_DIR) + "/tests/e2e/data/script_qwen3_reply.json");
}

std::string tool_model() {
  const std::string script = fs::temp_directory_path() / ("og-api-chat-tool-" + std::to_string(::getpid()) + ".json");
  std::ofstream(script) << kToolScript.dump();
  const std::string m = model_file("tool", script);
  fs::remove(script);
  return m;
}

std::string str(const og_string& s) { return std::string(s.data ? s.data : "", s.len); }

const char* kWeatherParams =
    R"({"type": "object", "properties": {"city": {"enum": ["Paris"]}}, "required": ["city"], "additionalProperties": false})";
const og_chat_tool kTools[] = {{"get_weather", "Weather now", kWeatherParams, 0}, {"get_time", "The time", nullptr, 0}};

class ChatTest : public ::testing::Test {
 protected:
  void open(const std::string& path) {
    ASSERT_FALSE(path.empty());
    ASSERT_EQ(og_model_open(path.c_str(), nullptr, &model_), OG_OK) << og_last_error();
    og_session_options so;
    og_session_options_init(&so);
    so.kv_max_capacity = 1024;
    ASSERT_EQ(og_session_new(model_, &so, &session_), OG_OK) << og_last_error();
  }
  void TearDown() override {
    og_chat_result_free(&r_);
    EXPECT_EQ(og_session_free(session_), OG_OK);
    EXPECT_EQ(og_model_close(model_), OG_OK);
  }
  og_status chat(const og_chat_request& req, int64_t max_tokens = 200) {
    og_chat_result_free(&r_);
    og_generate_options g;
    og_generate_options_init(&g);
    g.max_new_tokens = max_tokens;
    return og_session_chat(session_, &req, &g, &r_);
  }
  static og_chat_request request(const og_chat_msg* msgs, size_t n) {
    og_chat_request q;
    og_chat_request_init(&q);
    q.messages = msgs;
    q.n_messages = n;
    return q;
  }

  og_model* model_ = nullptr;
  og_session* session_ = nullptr;
  og_chat_result r_{};
};

const og_chat_msg kHi[] = {{"user", "Hi", nullptr, nullptr, nullptr, 0, nullptr}};
const og_chat_msg kWeather[] = {{"user", "Weather in Paris?", nullptr, nullptr, nullptr, 0, nullptr}};

TEST_F(ChatTest, PlainChatSplitsReasoningFromContent) {
  open(reply_model());
  ASSERT_EQ(chat(request(kHi, 1)), OG_OK) << og_last_error();
  EXPECT_EQ(str(r_.reasoning_content), "The user greets me.");
  EXPECT_EQ(str(r_.content), "Hello! How can I help you today?");
  EXPECT_STREQ(r_.finish_reason, "stop");
  EXPECT_EQ(r_.n_tool_calls, 0u);
  EXPECT_GT(r_.prompt_tokens, 0);
  EXPECT_EQ(r_.cached_tokens, 0);
  EXPECT_EQ(r_.completion_tokens, static_cast<int64_t>(r_.generation.tokens.n));
  // The raw turn keeps the markers the parser read.
  EXPECT_NE(str(r_.generation.text).find("</think>"), std::string::npos);
}

TEST_F(ChatTest, NextTurnExtendsThePreviousOnesCache) {
  open(reply_model());
  ASSERT_EQ(chat(request(kHi, 1)), OG_OK) << og_last_error();
  const int64_t first_prompt = r_.prompt_tokens;
  const std::string answer = str(r_.content);
  const og_chat_msg turn2[] = {kHi[0], {"assistant", answer.c_str(), nullptr, nullptr, nullptr, 0, nullptr},
                               {"user", "And again?", nullptr, nullptr, nullptr, 0, nullptr}};
  // A refused request (a bad message, a bad sampler setting) leaves the history as it was.
  int64_t before = -1, after = -2;
  ASSERT_EQ(og_session_position(session_, &before), OG_OK);
  const og_chat_msg bad[] = {kHi[0], {"robot", "x", nullptr, nullptr, nullptr, 0, nullptr}};
  EXPECT_EQ(chat(request(bad, 2)), OG_ERR_INVALID_ARGUMENT);
  og_generate_options g;
  og_generate_options_init(&g);
  g.sampler.temperature = -1;
  const og_chat_request q2 = request(turn2, 3);
  EXPECT_EQ(og_session_chat(session_, &q2, &g, &r_), OG_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(og_session_position(session_, &after), OG_OK);
  EXPECT_EQ(after, before);
  ASSERT_EQ(chat(request(turn2, 3)), OG_OK) << og_last_error();
  EXPECT_GE(r_.cached_tokens, first_prompt);
  EXPECT_EQ(r_.generation.prompt_tokens, r_.prompt_tokens - r_.cached_tokens);
  EXPECT_EQ(str(r_.content), "Hello! How can I help you today?");
}

// og_chat_encode renders as og_session_chat does (the same setup and render):
// its ids are the prompt a chat of the same messages prefills, and
// og_chat_render is their text.
TEST_F(ChatTest, ChatEncodeIsThePromptTheChatPrefills) {
  open(reply_model());
  const og_chat_message plain[] = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Again"}};
  const og_chat_msg msgs[] = {{"system", "Be brief.", nullptr, nullptr, nullptr, 0, nullptr},
                              {"user", "Hi", nullptr, nullptr, nullptr, 0, nullptr},
                              {"assistant", "Hello!", nullptr, nullptr, nullptr, 0, nullptr},
                              {"user", "Again", nullptr, nullptr, nullptr, 0, nullptr}};
  og_tokens ids{};
  ASSERT_EQ(og_chat_encode(model_, plain, 4, 1, &ids), OG_OK) << og_last_error();
  const std::vector<int32_t> encoded(ids.ids, ids.ids + ids.n);
  og_tokens_free(&ids);
  ASSERT_EQ(chat(request(msgs, 4), 1), OG_OK) << og_last_error();
  ASSERT_EQ(r_.prompt_tokens, static_cast<int64_t>(encoded.size()));
  og_tokens history{};
  ASSERT_EQ(og_session_history(session_, &history), OG_OK) << og_last_error();
  ASSERT_GE(history.n, encoded.size());
  EXPECT_EQ(std::vector<int32_t>(history.ids, history.ids + encoded.size()), encoded);
  og_tokens_free(&history);
  og_string text{};
  ASSERT_EQ(og_chat_render(model_, plain, 4, 1, &text), OG_OK) << og_last_error();
  og_string back{};
  ASSERT_EQ(og_detokenize(model_, encoded.data(), encoded.size(), 0, &back), OG_OK);
  EXPECT_EQ(str(back).substr(str(back).size() - str(text).size()), str(text));
  og_string_free(&text);
  og_string_free(&back);
}

// One rule and one message for a prompt's room at every edge
// (runtime/prompt_room.h, the server's): a prompt must leave room for a
// generated token. A session exactly as long as the prompt refuses it from
// og_session_chat and og_session_generate alike; one position more takes it.
TEST_F(ChatTest, APromptThatFillsTheSessionIsRefusedAtEveryEdgeInOneMessage) {
  open(reply_model());
  const og_chat_message plain[] = {{"user", "Hi"}};
  og_tokens ids{};
  ASSERT_EQ(og_chat_encode(model_, plain, 1, 1, &ids), OG_OK) << og_last_error();
  const std::vector<int32_t> prompt(ids.ids, ids.ids + ids.n);
  og_tokens_free(&ids);
  const int64_t n = static_cast<int64_t>(prompt.size());
  const std::string words = "the prompt of " + std::to_string(n) + " tokens does not fit: a session of " +
                            std::to_string(n) + " positions holds the prompt and at least one generated token " +
                            "(raise kv_max_capacity)";
  for (const int64_t capacity : {n, n + 1}) {
    og_session_options so;
    og_session_options_init(&so);
    so.kv_max_capacity = capacity;
    og_session* s = nullptr;
    ASSERT_EQ(og_session_new(model_, &so, &s), OG_OK) << og_last_error();
    og_generate_options g;
    og_generate_options_init(&g);
    g.max_new_tokens = 1;
    og_chat_result r{};
    const og_chat_request q = request(kHi, 1);
    const og_status chat_status = og_session_chat(s, &q, &g, &r);
    const std::string chat_error = og_last_error();
    og_chat_result_free(&r);
    og_generation gen{};
    const og_status gen_status = og_session_generate(s, prompt.data(), prompt.size(), &g, &gen);
    const std::string gen_error = og_last_error();
    og_generation_free(&gen);
    if (capacity == n) {
      EXPECT_EQ(chat_status, OG_ERR_CAPACITY);
      EXPECT_EQ(chat_error, words);
      EXPECT_EQ(gen_status, OG_ERR_CAPACITY);
      EXPECT_EQ(gen_error, words);
    } else {
      EXPECT_EQ(chat_status, OG_OK) << chat_error;
    }
    EXPECT_EQ(og_session_free(s), OG_OK);
  }
}

TEST_F(ChatTest, ToolCallRoundTrip) {
  open(tool_model());
  og_chat_request q = request(kWeather, 1);
  q.tools = kTools;
  q.n_tools = 2;
  ASSERT_EQ(chat(q), OG_OK) << og_last_error();
  EXPECT_STREQ(r_.finish_reason, "tool_calls");
  EXPECT_EQ(str(r_.reasoning_content), "The user wants the weather.");
  EXPECT_EQ(str(r_.content), "");
  ASSERT_EQ(r_.n_tool_calls, 2u);
  EXPECT_EQ(str(r_.tool_calls[0].name), "get_weather");
  EXPECT_EQ(json::parse(str(r_.tool_calls[0].arguments)), json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(str(r_.tool_calls[1].name), "get_time");
  EXPECT_EQ(str(r_.tool_calls[0].id).rfind("call_", 0), 0u);
  const int64_t first_prompt = r_.prompt_tokens;

  // The calls and their results go back; the answer is constrained to a schema.
  const std::string id0 = str(r_.tool_calls[0].id), id1 = str(r_.tool_calls[1].id);
  const std::string args0 = str(r_.tool_calls[0].arguments), reasoning = str(r_.reasoning_content);
  const og_chat_tool_call calls[] = {{id0.c_str(), "get_weather", args0.c_str()}, {id1.c_str(), "get_time", "{}"}};
  const og_chat_msg msgs[] = {kWeather[0],
                              {"assistant", nullptr, reasoning.c_str(), nullptr, calls, 2, nullptr},
                              {"tool", "sunny", nullptr, nullptr, nullptr, 0, id0.c_str()},
                              {"tool", "noon", nullptr, nullptr, nullptr, 0, id1.c_str()}};
  og_chat_request q2 = request(msgs, 4);
  q2.tools = kTools;
  q2.n_tools = 2;
  q2.response_format = "json_schema";
  q2.json_schema = R"({"type": "object", "properties": {"weather": {"enum": ["sunny"]}}, "required": ["weather"],
                       "additionalProperties": false})";
  ASSERT_EQ(chat(q2), OG_OK) << og_last_error();
  EXPECT_STREQ(r_.finish_reason, "stop");
  EXPECT_EQ(r_.n_tool_calls, 0u);
  EXPECT_EQ(str(r_.reasoning_content), "The user wants the weather.");
  EXPECT_EQ(json::parse(str(r_.content), nullptr, false), json::parse(R"({"weather": "sunny"})")) << str(r_.content);
  EXPECT_GE(r_.cached_tokens, first_prompt);  // turn 2's prompt extends turn 1's
}

TEST_F(ChatTest, ParallelToolCallsFalseGivesOneCall) {
  open(tool_model());
  og_chat_request q = request(kWeather, 1);
  q.tools = kTools;
  q.n_tools = 2;
  q.parallel_tool_calls = 0;
  ASSERT_EQ(chat(q), OG_OK) << og_last_error();
  ASSERT_EQ(r_.n_tool_calls, 1u);
  EXPECT_EQ(str(r_.tool_calls[0].name), "get_weather");
  EXPECT_EQ(str(r_.content), "");
  EXPECT_STREQ(r_.finish_reason, "tool_calls");
}

TEST_F(ChatTest, ForcedToolCallsReasonFirst) {
  open(tool_model());
  for (const char* choice : {"required", "get_time"}) {
    SCOPED_TRACE(choice);
    og_chat_request q = request(kWeather, 1);
    q.tools = kTools;
    q.n_tools = 2;
    q.tool_choice = choice;
    q.parallel_tool_calls = 0;
    ASSERT_EQ(chat(q), OG_OK) << og_last_error();
    EXPECT_EQ(str(r_.reasoning_content), "The user wants the weather.");
    ASSERT_EQ(r_.n_tool_calls, 1u) << str(r_.generation.text);
    EXPECT_EQ(str(r_.tool_calls[0].name), std::string(choice) == "required" ? "get_weather" : "get_time");
    EXPECT_TRUE(json::parse(str(r_.tool_calls[0].arguments), nullptr, false).is_object());
    EXPECT_STREQ(r_.finish_reason, "tool_calls");
  }
}

TEST_F(ChatTest, JsonSchemaAfterTheReasoning) {
  open(reply_model());
  og_chat_request q = request(kHi, 1);
  q.response_format = "json_schema";
  q.json_schema = R"({"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"],
                      "additionalProperties": false})";
  ASSERT_EQ(chat(q), OG_OK) << og_last_error();
  EXPECT_EQ(str(r_.reasoning_content), "The user greets me.");
  const json doc = json::parse(str(r_.content), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << str(r_.content);
  EXPECT_TRUE(doc["answer"] == "yes" || doc["answer"] == "no") << doc.dump();
  EXPECT_EQ(doc.size(), 1u);
  EXPECT_STREQ(r_.finish_reason, "stop");

  // With no room to reason (budget 0) the answer starts at once after a closed block.
  q.max_reasoning_tokens = 0;
  ASSERT_EQ(chat(q), OG_OK) << og_last_error();
  EXPECT_EQ(str(r_.reasoning_content), "");
  EXPECT_TRUE(json::parse(str(r_.content), nullptr, false).is_object()) << str(r_.content);

  // max_new_tokens inside the reasoning: finish_reason length, no answer.
  q.max_reasoning_tokens = -1;
  q.response_format = "json_object";
  ASSERT_EQ(chat(q, 2), OG_OK) << og_last_error();
  EXPECT_STREQ(r_.finish_reason, "length");
  EXPECT_EQ(str(r_.content), "");
}

TEST_F(ChatTest, StreamedDeltasAddUpToTheResult) {
  open(tool_model());
  og_chat_request q = request(kWeather, 1);
  q.tools = kTools;
  q.n_tools = 2;
  og_generate_options g;
  og_generate_options_init(&g);
  g.max_new_tokens = 200;
  ASSERT_EQ(og_session_chat_start(session_, &q, &g), OG_OK) << og_last_error();
  // Nothing else runs on the session meanwhile.
  EXPECT_EQ(og_session_chat(session_, &q, &g, &r_), OG_ERR_STATE);
  std::string reasoning, content;
  std::vector<std::string> names;
  std::vector<std::string> args(2);
  for (int done = 0; !done;) {
    og_chat_delta d;
    ASSERT_EQ(og_session_chat_next(session_, &d, &done), OG_OK) << og_last_error();
    reasoning.append(d.reasoning_content, d.reasoning_len);
    content.append(d.content, d.content_len);
    for (size_t i = 0; i < d.n_tool_calls; ++i) {
      if (d.tool_calls[i].name[0]) names.push_back(d.tool_calls[i].name);
      ASSERT_LT(d.tool_calls[i].index, 2);
      args[d.tool_calls[i].index] += d.tool_calls[i].arguments;
    }
  }
  ASSERT_EQ(og_session_chat_finish(session_, &r_), OG_OK) << og_last_error();
  EXPECT_EQ(reasoning, str(r_.reasoning_content));
  EXPECT_EQ(content, str(r_.content));
  EXPECT_EQ(names, (std::vector<std::string>{"get_weather", "get_time"}));
  ASSERT_EQ(r_.n_tool_calls, 2u);
  EXPECT_EQ(args[0], str(r_.tool_calls[0].arguments));
  EXPECT_STREQ(r_.finish_reason, "tool_calls");
  EXPECT_EQ(og_session_chat_finish(session_, nullptr), OG_ERR_STATE);
}

TEST_F(ChatTest, BadInputsNameTheField) {
  open(tool_model());
  auto expect_refused = [&](const og_chat_request& q, const std::string& field) {
    SCOPED_TRACE(field);
    EXPECT_EQ(chat(q), OG_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(og_last_error()).find("'" + field + "'"), std::string::npos) << og_last_error();
  };
  og_chat_request q = request(kWeather, 1);
  q.response_format = "json_schema";
  q.json_schema = R"({"type": 7})";
  expect_refused(q, "response_format.json_schema.schema");
  q.json_schema = "{not json";
  expect_refused(q, "response_format.json_schema.schema");
  q = request(kWeather, 1);
  q.tools = kTools;
  q.n_tools = 2;
  q.tool_choice = "get_wether";
  expect_refused(q, "tool_choice");
  q.tool_choice = "required";
  q.response_format = "json_object";
  expect_refused(q, "tool_choice");
  const og_chat_msg bad_role[] = {{"robot", "Hi", nullptr, nullptr, nullptr, 0, nullptr}};
  expect_refused(request(bad_role, 1), "messages[0].role");
  const og_chat_msg no_content[] = {{"user", nullptr, nullptr, nullptr, nullptr, 0, nullptr}};
  expect_refused(request(no_content, 1), "messages[0].content");
  expect_refused(request(kHi, 0), "messages");
  q = request(kHi, 1);
  q.grammar = "root ::= undefined-rule";
  expect_refused(q, "grammar");
  q = request(kHi, 1);
  q.response_format = "yaml";
  expect_refused(q, "response_format");
  q = request(kHi, 1);
  q.struct_size = 0;
  EXPECT_EQ(chat(q), OG_ERR_INVALID_ARGUMENT);
  // The session is untouched by refused requests and still chats.
  int64_t pos = -1;
  ASSERT_EQ(og_session_position(session_, &pos), OG_OK);
  EXPECT_EQ(pos, 0);
}

// The same through offgraph.hpp: typed messages and tools, the result struct, the stream.
TEST(ChatHpp, ToolRoundTripAndStream) {
  offgraph::Model model(tool_model());
  og_session_options so;
  og_session_options_init(&so);
  so.kv_max_capacity = 1024;
  offgraph::Session session = model.session(&so);
  offgraph::ChatRequest req;
  req.messages.push_back({"user", "Weather in Paris?", {}, {}, {}, {}});
  req.tools = {{"get_weather", "Weather now", kWeatherParams, false}, {"get_time", std::nullopt, "", false}};
  req.parallel_tool_calls = false;
  const offgraph::ChatResult r = session.chat(req);
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_EQ(r.reasoning_content, "The user wants the weather.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(r.tool_calls[0].arguments), json::parse(R"({"city": "Paris"})"));

  req.messages.push_back({"assistant", std::nullopt, r.reasoning_content, std::nullopt, r.tool_calls, std::nullopt});
  req.messages.push_back({"tool", "sunny", std::nullopt, std::nullopt, {}, r.tool_calls[0].id});
  req.response_format = "json_schema";
  req.json_schema =
      R"({"type": "object", "properties": {"weather": {"enum": ["sunny"]}}, "required": ["weather"], "additionalProperties": false})";
  offgraph::ChatStream st = session.chat_stream(req);
  offgraph::ChatDelta d;
  std::string content;
  while (st.next(&d)) content += d.content;
  content += d.content;
  const offgraph::ChatResult r2 = st.finish();
  EXPECT_EQ(content, r2.content);
  EXPECT_EQ(json::parse(r2.content, nullptr, false), json::parse(R"({"weather": "sunny"})")) << r2.content;
  EXPECT_GE(r2.cached_tokens, r.prompt_tokens);

  req.tool_choice = "no_such_tool";
  req.response_format.clear();
  try {
    session.chat(req);
    FAIL() << "an unknown tool in tool_choice was accepted";
  } catch (const offgraph::Error& e) {
    EXPECT_EQ(e.status(), OG_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("'tool_choice'"), std::string::npos) << e.what();
  }
}

}  // namespace
