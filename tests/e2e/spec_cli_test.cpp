// Speculative decoding through the commands: `run` and `chat` with prompt
// lookup or a draft model print the text plain decoding prints (stories260K's
// reference continuation; a chat with /undo), report the acceptance, refuse
// bad combinations and a draft with another tokenizer in one line, and `bench`
// gives its verify and generation rows.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

void expect_data() { ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf; }

std::vector<std::string> run_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"run", "--model", kGguf, "--prompt", "Once upon a time", "--max-new-tokens", "60",
                                "--chat", "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(SpecCli, RunWithPromptLookupOrADraftPrintsThePlainText) {
  expect_data();
  const Proc plain = offgraph(run_args({}));
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_FALSE(plain.out.empty());
  const Proc ngram = offgraph(run_args({"--spec", "ngram", "--draft-max", "5", "--spec-ngram-size", "2"}));
  ASSERT_EQ(ngram.code, 0) << ngram.err;
  EXPECT_EQ(ngram.out, plain.out);
  EXPECT_NE(ngram.err.find("[spec] prompt lookup"), std::string::npos) << ngram.err;
  EXPECT_NE(ngram.err.find("draft tokens accepted"), std::string::npos) << ngram.err;
  // The target as its own draft: every draft token accepted.
  const Proc draft = offgraph(run_args({"--model-draft", kGguf, "--draft-max", "4", "--draft-p-min", "0"}));
  ASSERT_EQ(draft.code, 0) << draft.err;
  EXPECT_EQ(draft.out, plain.out);
  EXPECT_NE(draft.err.find("accepted (100.0 %)"), std::string::npos) << draft.err;
  // --stats json carries the acceptance.
  const Proc js = offgraph(run_args({"--model-draft", kGguf, "--draft-max", "4", "--draft-p-min", "0", "--stats", "json"}));
  ASSERT_EQ(js.code, 0) << js.err;
  const std::vector<std::string> out_lines = lines(js.out);
  ASSERT_FALSE(out_lines.empty());
  const nlohmann::json report = nlohmann::json::parse(out_lines.back());
  ASSERT_TRUE(report.contains("spec")) << out_lines.back();
  EXPECT_GT(report["spec"]["draft_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(report["spec"]["accepted_tokens"], report["spec"]["draft_tokens"]);
  EXPECT_DOUBLE_EQ(report["spec"]["acceptance"].get<double>(), 1.0);
  EXPECT_GT(report["spec"]["tokens_per_target_forward"].get<double>(), 2.0);
  EXPECT_FALSE(nlohmann::json::parse(lines(offgraph(run_args({"--stats", "json"})).out).back()).contains("spec"));
  // Sampled: runs, and a seed fixes the text.
  const Proc s1 = offgraph(run_args({"--spec", "ngram", "--temperature", "0.8", "--seed", "5"}));
  const Proc s2 = offgraph(run_args({"--spec", "ngram", "--temperature", "0.8", "--seed", "5"}));
  ASSERT_EQ(s1.code, 0) << s1.err;
  EXPECT_EQ(s1.out, s2.out);
}

TEST(SpecCli, ChatUndoUnderSpeculationIsThePlainTranscript) {
  expect_data();
  const std::string input = "Once upon a time\n/undo\nOnce upon a time\nLily\n/quit\n";
  const std::vector<std::string> base = {"chat", "--model", kGguf, "--max-new-tokens", "30", "--chat", "0"};
  const Proc plain = offgraph(base, input);
  std::vector<std::string> spec = base;
  spec.insert(spec.end(), {"--spec", "ngram"});
  const Proc p = offgraph(spec, input);
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, plain.out);
  EXPECT_EQ(lines(p.out).size(), 3u) << p.out;
}

TEST(SpecCli, BadCombinationsAndAnotherTokenizerAreOneLineErrors) {
  expect_data();
  struct Case {
    std::vector<std::string> extra;
    int code;
    std::string says;
  };
  const std::string gemma = scratch_dir() + "/spec_gemma4.gguf";
  synth::write_gguf(synth::tiny_spec(synth::Family::kGemma4), gemma);
  const std::vector<Case> cases = {
      {{"--spec", "ngram", "--model-draft", kGguf}, 2, "two proposers"},
      {{"--draft-max", "4"}, 2, "--draft-max needs --spec ngram or --model-draft"},
      {{"--spec", "draft"}, 2, "--spec draft needs --model-draft"},
      {{"--spec", "ngram", "--draft-p-min", "0.5"}, 2, "--draft-p-min is for a draft model"},
      {{"--spec", "ngram", "--draft-min", "9", "--draft-max", "3"}, 2, "--draft-min 9 is above --draft-max 3"},
      {{"--spec", "ngram", "--draft-max", "0"}, 2, "draft-max"},
      {{"--spec", "ngram", "--spec-ngram-min", "4"}, 2, "--spec-ngram-min 4 is above --spec-ngram-size 3"},
      {{"--model-draft", kGguf, "--spec-ngram-size", "2"}, 2, "are for --spec ngram"},
      {{"--model-draft", "/nonexistent/draft.gguf"}, 1, "/nonexistent/draft.gguf"},
      {{"--model-draft", gemma}, 1, "speculative decoding needs the same tokenizer"},
  };
  for (const Case& c : cases) {
    const Proc p = offgraph(run_args(c.extra));
    EXPECT_EQ(p.code, c.code) << c.says << "\n" << p.err;
    EXPECT_NE(p.err.find(c.says), std::string::npos) << p.err;
    EXPECT_EQ(count(p.err, "\n"), 1u) << p.err;
    EXPECT_TRUE(p.out.empty()) << p.out;
  }
}

TEST(SpecCli, BenchReportsVerifyAndGenerationRows) {
  expect_data();
  const Proc p = offgraph({"bench", "--model", kGguf, "-p", "0", "-n", "16", "-r", "1", "--spec-verify", "1,4",
                           "--spec", "ngram", "--spec-prompt", "Once upon a time", "--json", "--no-progress"});
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  ASSERT_TRUE(j.contains("spec")) << p.out;
  const nlohmann::json& v = j["spec"]["verify"];
  ASSERT_EQ(v.size(), 3u) << p.out;
  EXPECT_EQ(v[0]["k"], 0);
  EXPECT_EQ(v[2]["k"], 4);
  EXPECT_GT(v[2]["ms_per_step"].get<double>(), 0.0);
  const nlohmann::json& g = j["spec"]["generation"];
  ASSERT_EQ(g.size(), 2u) << p.out;
  EXPECT_EQ(g[0]["mode"], "plain");
  EXPECT_EQ(g[1]["mode"], "spec ngram");
  EXPECT_EQ(g[0]["tokens"], g[1]["tokens"]);
  EXPECT_GT(g[1]["draft_tokens"].get<int64_t>(), 0);
  EXPECT_GE(g[1]["tokens_per_target_forward"].get<double>(), 1.0);
  const Proc bad = offgraph({"bench", "--model", kGguf, "--spec", "ngram"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--spec-prompt"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace og::e2e
