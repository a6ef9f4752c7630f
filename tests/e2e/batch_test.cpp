// `offgraph batch` through the built binary: each generation equals `run` on
// the same prompt, the reference's two-round prefix-cache check (four equal
// files; 0 then prompt - 1 reused tokens), prompts files (plain and JSON
// lines), reports, and every bad flag or file with its one-line error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) out.push_back(l);
  return out;
}

nlohmann::json stats_json(const std::string& err) {
  for (const std::string& l : lines(err))
    if (!l.empty() && l[0] == '{') return nlohmann::json::parse(l);
  return {};
}

TEST(Batch, EachGenerationEqualsRunAlone) {
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Tom went to the park"};
  for (const char* kind : {"batched-cell", "batched-sequence"}) {
    std::vector<std::string> args = {"batch", "--model", kGguf, "--max-new-tokens", "40", "--cache-kind", kind,
                                     "--max-decode-sequences", "2", "--step-tokens", "3"};
    args.insert(args.end(), prompts.begin(), prompts.end());
    const Proc b = offgraph(args);
    ASSERT_EQ(b.code, 0) << b.err;
    const auto outs = lines(b.out);
    ASSERT_EQ(outs.size(), prompts.size()) << b.out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const Proc r = offgraph({"run", "--model", kGguf, "--prompt", prompts[i], "--max-new-tokens", "40"});
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(outs[i], r.out) << kind << " prompt " << i;
    }
    EXPECT_NE(b.err.find(std::string("off-graph ") + kind), std::string::npos) << b.err;
    EXPECT_NE(b.err.find("[gen 2] prompt"), std::string::npos) << b.err;
    EXPECT_NE(b.err.find("peak 2 concurrent sessions"), std::string::npos) << b.err;
  }
}

TEST(Batch, TwoRoundsWithAndWithoutThePrefixCacheWriteFourEqualFiles) {
  const std::string dir = scratch_dir() + "/rounds";
  std::filesystem::create_directories(dir);
  std::vector<nlohmann::json> reports;
  for (const char* entries : {"0", "2"}) {
    const std::string prefix = dir + "/cache-" + entries;
    const Proc p = offgraph({"batch", "--model", kGguf, "Once upon a time", "--prompt-rounds", "2",
                             "--prefix-cache-entries", entries, "--out-prefix", prefix, "--max-new-tokens", "30",
                             "--stats", "json"});
    ASSERT_EQ(p.code, 0) << p.err;
    EXPECT_EQ(p.err, "");  // --stats json: no diagnostics on stderr
    ASSERT_EQ(lines(p.out).size(), 1u) << p.out;  // the texts went to files: stdout is the report alone
    reports.push_back(stats_json(p.out));
  }
  const std::string first = slurp(dir + "/cache-0_0.txt");
  EXPECT_FALSE(first.empty());
  for (const char* f : {"cache-0_1.txt", "cache-2_0.txt", "cache-2_1.txt"}) EXPECT_EQ(slurp(dir + "/" + f), first) << f;
  const auto& cold = reports[0]["generations"];
  const auto& cached = reports[1]["generations"];
  ASSERT_EQ(cached.size(), 2u);
  EXPECT_EQ(cold[1]["cached_prompt_tokens"], 0);
  EXPECT_EQ(cached[0]["cached_prompt_tokens"], 0);
  EXPECT_EQ(cached[1]["cached_prompt_tokens"], cached[1]["prompt_tokens"].get<int>() - 1);
  EXPECT_EQ(reports[1]["run"]["prefix_cache"]["hits"], 1);
  EXPECT_EQ(cached[1]["finish_reason"], "length");
}

TEST(Batch, PromptsFileWithPlainAndJsonLines) {
  const std::string path = scratch_dir() + "/prompts.txt";
  std::ofstream(path) << "The cat\n\n{\"prompt\": \"Once upon a time\", \"max_new_tokens\": 5}\nLily\n";
  const Proc p = offgraph({"batch", "--model", kGguf, "--prompts-file", path, "--max-new-tokens", "12", "--stats",
                           "json"});
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json j = stats_json(p.out);  // the report is stdout's last line
  ASSERT_EQ(j["generations"].size(), 3u);
  EXPECT_EQ(j["generations"][0]["generated_tokens"], 12);
  EXPECT_EQ(j["generations"][1]["generated_tokens"], 5);
  EXPECT_EQ(j["generations"][2]["generated_tokens"], 12);
  EXPECT_EQ(j["run"]["peak_concurrent_sessions"], 3);
  for (const char* key : {"aggregate_decode_tok_s", "mean_rows_per_step", "wall_ms", "peak_cache_bytes"})
    EXPECT_TRUE(j["run"].contains(key)) << key;
  EXPECT_EQ(lines(p.out).size(), 4u);  // three generations and the report
}

TEST(Batch, APromptThatCanNeverFitIsRefusedAndTheRestRun) {
  const Proc p = offgraph({"batch", "--model", kGguf, "--max-session-tokens", "20", "--max-new-tokens", "10", "Hi",
                           "Once upon a time there was a very very long prompt that does not fit at all"});
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_NE(p.err.find("finish: refused"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("exceeds the session limit of 20 tokens"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("[gen 0]"), std::string::npos);
  EXPECT_EQ(lines(p.out).size(), 2u);
}

// A session limit past the trained context (512) warns about the flag given,
// not about a --kv-max-capacity the user never wrote.
TEST(Batch, SessionLimitPastTheContextWarnsWithoutNamingAnotherFlag) {
  const Proc p = offgraph({"batch", "--model", kGguf, "--max-session-tokens", "1024", "-n", "4", "Hi"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("a cache of 1024 positions per session exceeds the model's trained context length 512"),
            std::string::npos)
      << p.err;
  EXPECT_EQ(p.err.find("--kv-max-capacity"), std::string::npos) << p.err;
}

TEST(Batch, BadFlagsAndFilesAreOneLineErrors) {
  const std::string dir = scratch_dir();
  const std::string bad_json = dir + "/bad.jsonl";
  std::ofstream(bad_json) << "{\"prompt\": 3}\n";
  const std::string unknown_key = dir + "/unknown.jsonl";
  std::ofstream(unknown_key) << "{\"prompt\": \"a\", \"temperature\": 1}\n";
  const std::string empty = dir + "/empty.txt";
  std::ofstream(empty) << "\n\n";
  const std::string negative = dir + "/negative.jsonl";
  std::ofstream(negative) << "{\"prompt\": \"a\", \"max_new_tokens\": -1}\n";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"batch", "--model", kGguf}, 2, "give prompts as arguments or --prompts-file"},
      {{"batch", "--model", kGguf, "x", "--cache-kind", "sequence"}, 2, "--cache-kind"},
      {{"batch", "--model", kGguf, "x", "--kv-cache", "reference"}, 2, "unknown"},
      {{"batch", "--model", kGguf, "x", "--max-decode-sequences", "0"}, 2, "--max-decode-sequences"},
      {{"batch", "--model", kGguf, "x", "--step-tokens", "2", "--max-decode-sequences", "4"}, 2, "--step-tokens 2"},
      {{"batch", "--model", kGguf, "x", "--step-prefills", "-1"}, 2, "--step-prefills"},
      {{"batch", "--model", kGguf, "x", "--prompt-rounds", "0"}, 2, "--prompt-rounds"},
      {{"batch", "--model", kGguf, "x", "--prefix-cache-entries", "-1"}, 2, "--prefix-cache-entries"},
      {{"batch", "--model", kGguf, "x", "--max-session-tokens", "900", "--kv-max-capacity", "100"}, 2,
       "exceeds --kv-max-capacity 100"},
      {{"batch", "--model", kGguf, "--prompts-file", dir + "/missing.txt"}, 1, "cannot read"},
      {{"batch", "--model", kGguf, "--prompts-file", bad_json}, 1, "bad.jsonl:1: \"prompt\" must be a string"},
      {{"batch", "--model", kGguf, "--prompts-file", unknown_key}, 1, "unknown key \"temperature\""},
      {{"batch", "--model", kGguf, "--prompts-file", empty}, 1, "holds no prompts"},
      // The bound and words of --max-new-tokens and every edge (runtime/generation_limits.h).
      {{"batch", "--model", kGguf, "--prompts-file", negative}, 1,
       "negative.jsonl:1: \"max_new_tokens\" is -1, outside [0, 2147483647]"},
      {{"batch", "--model", kGguf, "x", "--out-prefix", dir + "/no/such/dir/p"}, 1, "no such directory"},
      {{"batch", "--model", kGguf, "x", "--out-prefix", empty + "/p"}, 1, "empty.txt: not a directory"},
      {{"batch", "--model", dir + "/missing.gguf", "x"}, 1, "no such file"},
  };
  for (const Case& c : cases) {
    const Proc p = offgraph(c.args);
    EXPECT_EQ(p.code, c.code) << c.args.back() << ": " << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
  }
}

// A JSON line's "messages" is read by the parser of POST /v1/chat/completions
// and rendered as run, chat, the server and the library render the same
// conversation: [system, user] gives run --system's text, [user, assistant,
// user] (text parts too) the reply chat gives to its second turn.
TEST(Batch, MessagesLinesMeanWhatARequestBodyMeans) {
  const Proc run = offgraph({"run", "--model", kGguf, "--system", "Lily", "--prompt", "Once upon a time",
                             "--max-new-tokens", "12"});
  ASSERT_EQ(run.code, 0) << run.err;
  const Proc chat = offgraph({"chat", "--model", kGguf, "--max-new-tokens", "12"}, "Once upon a time\nTom\n");
  ASSERT_EQ(chat.code, 0) << chat.err;
  const auto turns = lines(chat.out);
  ASSERT_EQ(turns.size(), 2u) << chat.out;
  nlohmann::json two = {{"messages",
                         {{{"role", "user"}, {"content", "Once upon a time"}},
                          {{"role", "assistant"}, {"content", turns[0]}},
                          {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "T"}}, {{"type", "text"}, {"text", "om"}}}}}}},
                        {"max_new_tokens", 12}};
  const std::string path = scratch_dir() + "/messages.jsonl";
  std::ofstream(path) << R"({"messages": [{"role": "system", "content": "Lily"}, {"role": "user", "content": "Once upon a time"}]})"
                      << "\n" << two.dump() << "\n";
  const Proc p = offgraph({"batch", "--model", kGguf, "--prompts-file", path, "--max-new-tokens", "12"});
  ASSERT_EQ(p.code, 0) << p.err;
  const auto outs = lines(p.out);
  ASSERT_EQ(outs.size(), 2u) << p.out;
  EXPECT_EQ(outs[0], run.out);
  EXPECT_EQ(outs[1], turns[1]);
}

// The request body's errors, with the file and line; a message only a Jinja
// template renders is refused naming its field.
TEST(Batch, BadMessagesLinesAreTheRequestBodysErrorsWithTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages": [{"role": "bot", "content": "x"}]})",
       "bad.jsonl:2: 'messages[0].role' is 'bot': expected system, developer, user, assistant or tool"},
      {R"({"messages": []})", "bad.jsonl:2: 'messages' is empty: give at least one message"},
      {R"({"messages": [{"role": "user"}]})", "bad.jsonl:2: 'messages[0].content' is required"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
       "bad.jsonl:2: 'messages[0].content[0].text' is required"},
      {R"({"messages": "hi"})", "bad.jsonl:2: 'messages'"},
      {R"({"prompt": "a", "messages": [{"role": "user", "content": "x"}]})",
       "bad.jsonl:2: give \"prompt\" (text) or \"messages\" (a chat), not both"},
      {R"({"prompt": "a", "reasoning_effort": "low"})", "bad.jsonl:2: \"reasoning_effort\" goes with \"messages\""},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "huge"})",
       "bad.jsonl:2: 'reasoning_effort' is 'huge': expected none, minimal, low, medium or high"},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "42"}]})",
       "bad.jsonl:2: 'messages[1].role' needs a Jinja chat template, and this run renders with the built-in '0' "
       "template (give one with --chat-template-file, or --chat auto on a model that ships one)"},
  };
  const std::string path = scratch_dir() + "/bad.jsonl";
  for (const auto& [line, message] : cases) {
    std::ofstream(path) << "Once upon a time\n" << line << "\n";
    const Proc p = offgraph({"batch", "--model", kGguf, "--prompts-file", path, "--max-new-tokens", "4"});
    EXPECT_EQ(p.code, 1) << line << ": " << p.err;
    EXPECT_NE(p.err.find(message), std::string::npos) << line << ": " << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
    EXPECT_EQ(p.out, "");
  }
}

}  // namespace
}  // namespace og::e2e
