// `offgraph chat` keeps a reply in its conversation as a server client sends
// it back: what the format's reply parser reads from it (the content, and
// the reasoning where the template reads request fields), not the text shown.
// On gpt-oss's harmony the shown text drops the control tokens
// ("<|channel|>final<|message|>Yes." shows as "finalYes."); kept as shown, the
// next turn rendered "finalYes." as the earlier answer. The conversation
// after two turns is then og_session_chat's of the same turns, token for
// token: the same history length, and nothing of the reply taken back.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e_util.h"
#include "offgraph/offgraph.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

// A scripted model under gpt-oss's template whose reply is the final channel's "Yes.".
std::string harmony_model() {
  const std::string path = scratch_dir() + "/chat-history-harmony.gguf";
  if (std::filesystem::exists(path)) return path;
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen3);
  spec.tokenizer = "llama3";
  spec.tied = false;
  spec.d_model = 32;
  spec.weight_dtype = DType::F16;
  for (const char* t : {"<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>", "<|constrain|>"})
    spec.script.tokens.push_back({t, true});
  for (const char* t : {"final", "Yes."}) spec.script.tokens.push_back({t, false});
  spec.script.chains = {{"assistant", "<|channel|>", "final", "<|message|>", "Yes.", "<|return|>"}};
  spec.chat_template = slurp(std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/openai-gpt-oss-120b.jinja");
  synth::write_gguf(spec, path);
  return path;
}

std::string text_of(const og_string& s) { return std::string(s.data ? s.data : "", s.len); }

TEST(ChatHistory, AHarmonyReplyIsKeptAsItsParsedContent) {
  const std::string model = harmony_model();
  const Proc p = offgraph({"chat", "--model", model, "--temp", "0", "--max-new-tokens", "5", "--kv-max-capacity", "512"},
                          "Is it?\nAnd now?\n");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("finalYes."), std::string::npos) << p.out;  // shown without its markers
  EXPECT_EQ(p.err.find("renders differently"), std::string::npos) << p.err;

  // The same two turns through og_session_chat, the client sending back the content.
  og_model* m = nullptr;
  ASSERT_EQ(og_model_open(model.c_str(), nullptr, &m), OG_OK) << og_last_error();
  og_session_options so;
  og_session_options_init(&so);
  so.kv_max_capacity = 512;
  og_session* s = nullptr;
  ASSERT_EQ(og_session_new(m, &so, &s), OG_OK) << og_last_error();
  og_generate_options g;
  og_generate_options_init(&g);
  g.max_new_tokens = 5;
  g.sampler.temperature = 0;
  og_chat_request q;
  og_chat_request_init(&q);
  const og_chat_msg first[] = {{"user", "Is it?", nullptr, nullptr, nullptr, 0, nullptr}};
  q.messages = first;
  q.n_messages = 1;
  og_chat_result r{};
  ASSERT_EQ(og_session_chat(s, &q, &g, &r), OG_OK) << og_last_error();
  const std::string answer = text_of(r.content);
  EXPECT_EQ(answer, "Yes.");
  og_chat_result_free(&r);
  const og_chat_msg second[] = {{"user", "Is it?", nullptr, nullptr, nullptr, 0, nullptr},
                                {"assistant", answer.c_str(), nullptr, nullptr, nullptr, 0, nullptr},
                                {"user", "And now?", nullptr, nullptr, nullptr, 0, nullptr}};
  q.messages = second;
  q.n_messages = 3;
  ASSERT_EQ(og_session_chat(s, &q, &g, &r), OG_OK) << og_last_error();
  og_chat_result_free(&r);
  int64_t position = 0;
  ASSERT_EQ(og_session_position(s, &position), OG_OK);
  EXPECT_EQ(og_session_free(s), OG_OK);
  EXPECT_EQ(og_model_close(m), OG_OK);
  // The chat's fill line after its second turn.
  const size_t last = p.err.rfind("/512 tokens]");
  ASSERT_NE(last, std::string::npos) << p.err;
  const size_t open = p.err.rfind('[', last);
  EXPECT_EQ(p.err.substr(open + 1, last - open - 1), std::to_string(position)) << p.err;
}

}  // namespace
}  // namespace og::e2e
