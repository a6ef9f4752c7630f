// `offgraph chat` renders the whole conversation each turn as one
// og::ChatRequest, through the planning the server and the library share
// (runtime/chat_turn.h), and keeps the prefix of the session's history that
// the render shares: a second turn prefills only what it adds; /undo and a
// new turn equal a fresh conversation of the same turns; a template that
// renders an earlier reply differently once a turn follows it (Qwen 3 drops
// the <think> block) takes the reply back and prefills it as the template
// renders it, exactly what a fresh render (the library's og_session_chat on
// a new session) prefills.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "offgraph/offgraph.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

using json = nlohmann::json;

// A scripted model (og-synth --script) under Qwen 3's template: after
// "<|im_start|>assistant\n" it reasons, then answers "Hello there" and ends
// on <|eot_id|> (a stop id of the llama3 vocabulary); under the built-in
// llama3 format the prompt ends in "\n\n" and the answer follows at once.
std::string scripted_model() {
  const std::string path = scratch_dir() + "/chat-render-scripted.gguf";
  if (std::filesystem::exists(path)) return path;
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen3);
  spec.tokenizer = "llama3";
  spec.tied = false;
  spec.d_model = 32;
  spec.weight_dtype = DType::F16;
  for (const char* t : {"<|im_start|>", "<|im_end|>"}) spec.script.tokens.push_back({t, true});
  for (const char* t : {"<think>", "</think>", "Let me", " think", " hard."}) spec.script.tokens.push_back({t, false});
  spec.script.chains = {{"\n", "<think>", "Let me", " think", " hard.", "</think>", "Hello", " there", "<|eot_id|>"},
                        {"\n\n", "Hello"}};
  spec.chat_template = slurp(std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/Qwen-Qwen3-0.6B.jinja");
  synth::write_gguf(spec, path);
  return path;
}

// A real model (raw text): its replies depend on the whole context.
std::string stories() {
  const std::string path = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
  EXPECT_TRUE(std::filesystem::exists(path)) << "the test model is missing: " << path;
  return path;
}

struct ChatRun {
  Proc p;
  json report;  // at the end
  json asked;   // by the first /stats (--stats json prints it on stderr)
};

ChatRun chat(const std::string& model, const std::string& format, const std::string& turns) {
  static int n = 0;
  const std::string report = scratch_dir() + "/chat-render-" + std::to_string(n++) + ".json";
  ChatRun r{offgraph({"chat", "--model", model, "--chat", format, "--max-new-tokens", "12", "--stats", "json",
                      "--stats-file", report, "--verbose"},
                     turns),
            json(), json()};
  EXPECT_EQ(r.p.code, 0) << r.p.err;
  r.report = json::parse(slurp(report));
  for (const std::string& l : lines(r.p.err))
    if (r.asked.is_null() && !l.empty() && l[0] == '{') r.asked = json::parse(l);
  return r;
}

struct Fresh {
  std::string content, reasoning;
  int64_t prompt_tokens = 0;
};

// The library's reply to `messages` on a new session: a fresh render.
Fresh library_fresh(const std::string& model, const char* format, const std::vector<std::pair<const char*, std::string>>& messages) {
  og_model_options mo;
  og_model_options_init(&mo);
  mo.chat_template = format;
  og_model* m = nullptr;
  EXPECT_EQ(og_model_open(model.c_str(), &mo, &m), OG_OK) << og_last_error();
  og_session* s = nullptr;
  EXPECT_EQ(og_session_new(m, nullptr, &s), OG_OK) << og_last_error();
  std::vector<og_chat_msg> msgs;
  for (const auto& [role, text] : messages) {
    og_chat_msg c{};
    c.role = role;
    c.content = text.c_str();
    msgs.push_back(c);
  }
  og_chat_request q;
  og_chat_request_init(&q);
  q.messages = msgs.data();
  q.n_messages = msgs.size();
  og_generate_options g;
  og_generate_options_init(&g);
  g.max_new_tokens = 12;
  g.sampler.temperature = 0;
  og_chat_result r{};
  EXPECT_EQ(og_session_chat(s, &q, &g, &r), OG_OK) << og_last_error();
  Fresh f{std::string(r.content.data ? r.content.data : "", r.content.len),
          std::string(r.reasoning_content.data ? r.reasoning_content.data : "", r.reasoning_content.len),
          r.prompt_tokens};
  og_chat_result_free(&r);
  og_session_free(s);
  og_model_close(m);
  return f;
}

TEST(ChatRender, TheSecondTurnPrefillsOnlyWhatItAdds) {
  const std::string model = scripted_model();
  const ChatRun two = chat(model, "llama3", "Hi\n/stats\nHow are you?\n");
  EXPECT_EQ(two.p.out, "Hello there\nHello there\n");
  const int64_t p1 = two.asked.at("prompt_tokens"), g1 = two.asked.at("generated_tokens");
  const int64_t p2 = two.report.at("prompt_tokens");
  // The whole second render, as a new session prefills it.
  const Fresh fresh = library_fresh(model, "llama3", {{"user", "Hi"}, {"assistant", "Hello there"}, {"user", "How are you?"}});
  EXPECT_EQ(fresh.content, "Hello there");
  // Kept: the first turn's prompt and reply (its closing <|eot_id|> included,
  // forwarded now as every reply's last token is); prefilled: the rest.
  EXPECT_EQ(p2 - p1, fresh.prompt_tokens - (p1 + g1) + 1) << two.p.err;
  EXPECT_EQ(two.p.err.find("renders differently"), std::string::npos) << two.p.err;
}

TEST(ChatRender, AnEarlierReplyRenderedDifferentlyIsPrefilledAsAFreshRenderWouldBe) {
  const std::string model = scripted_model();
  const ChatRun two = chat(model, "auto", "Hi\nAnd again?\n");
  const std::string reply = "<think>Let me think hard.</think>Hello there";
  EXPECT_EQ(two.p.out, reply + "\n" + reply + "\n");
  // Qwen 3's template drops the reasoning of a reply a user turn follows:
  // the reply is taken back and the turn prefills from the end of the
  // first prompt, so the two turns prefilled what one fresh render does.
  EXPECT_NE(two.p.err.find("[the history renders differently now: 8 tokens taken back"), std::string::npos)
      << two.p.err;
  const Fresh fresh = library_fresh(model, "auto", {{"user", "Hi"}, {"assistant", reply}, {"user", "And again?"}});
  EXPECT_EQ(fresh.reasoning + "|" + fresh.content, "Let me think hard.|Hello there");
  EXPECT_EQ(two.report.at("prompt_tokens").get<int64_t>(), fresh.prompt_tokens) << two.p.err;
}

TEST(ChatRender, UndoThenATurnEqualsAFreshConversationOfTheSameTurns) {
  const std::string model = stories();
  const ChatRun undone = chat(model, "0", "Once upon a time\nTell me more\n/undo\nWhat then?\n");
  const ChatRun fresh = chat(model, "0", "Once upon a time\nWhat then?\n");
  const auto u = lines(undone.p.out), f = lines(fresh.p.out);
  ASSERT_EQ(u.size(), 3u) << undone.p.out;
  ASSERT_EQ(f.size(), 2u) << fresh.p.out;
  EXPECT_EQ(u[0], f[0]);
  EXPECT_EQ(u[2], f[1]);
  EXPECT_NE(u[1], u[2]);  // another question, another reply
  // The library's fresh render of the same turns gives the same reply.
  EXPECT_EQ(library_fresh(model, "0", {{"user", "Once upon a time"}, {"assistant", f[0]}, {"user", "What then?"}}).content,
            f[1]);
}

}  // namespace
}  // namespace og::e2e
