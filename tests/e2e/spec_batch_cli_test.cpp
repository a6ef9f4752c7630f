// Speculative decoding in `batch` and `serve`: batch --spec ngram prints the
// plain text of every prompt and reports the acceptance in --stats json; a
// draft model shared by the sessions does too; bad combinations and a draft
// with another tokenizer are one line and a non-zero exit.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kStory =
    "Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little";

std::vector<std::string> batch_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"batch", "--model", kGguf, "--chat", "0", "--max-new-tokens", "40",
                                "--max-decode-sequences", "3", kStory, "The dog ran to the park. The dog", kStory};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(SpecBatchCli, PromptLookupPrintsThePlainTextAndReportsAcceptance) {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  const Proc plain = offgraph(batch_args({}));
  ASSERT_EQ(plain.code, 0) << plain.err;
  const Proc spec = offgraph(batch_args({"--spec", "ngram", "--draft-max", "5"}));
  ASSERT_EQ(spec.code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("[batch] spec: "), std::string::npos) << spec.err;
  const Proc js = offgraph(batch_args({"--spec", "ngram", "--stats", "json"}));
  ASSERT_EQ(js.code, 0) << js.err;
  const nlohmann::json r = nlohmann::json::parse(lines(js.out).back())["run"];
  ASSERT_TRUE(r.contains("spec")) << js.out;
  const int64_t accepted = r["spec"]["accepted_tokens"].get<int64_t>();
  EXPECT_GT(accepted, 0);
  int64_t per_pos = 0;
  for (const auto& n : r["spec"]["accepted_per_pos"]) per_pos += n.get<int64_t>();
  EXPECT_EQ(per_pos, accepted);
  EXPECT_FALSE(nlohmann::json::parse(lines(offgraph(batch_args({"--stats", "json"})).out).back())["run"].contains("spec"));
}

TEST(SpecBatchCli, ADraftModelSharedByTheSessionsPrintsThePlainText) {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  const Proc plain = offgraph(batch_args({}));
  ASSERT_EQ(plain.code, 0) << plain.err;
  // The target as its own draft: every draft token accepted, the same text.
  const Proc self = offgraph(batch_args({"--model-draft", kGguf, "--draft-p-min", "0"}));
  ASSERT_EQ(self.code, 0) << self.err;
  EXPECT_EQ(self.out, plain.out);
  EXPECT_NE(self.err.find("accepted (100.0 %)"), std::string::npos) << self.err;
  // Another tokenizer: one line, exit 1, in batch and serve alike.
  const std::string other = std::string(OG_TESTDATA_DIR) + "/models/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf";
  for (const std::string cmd : {"batch", "serve"}) {
    std::vector<std::string> a = {cmd, "--model", kGguf, "--model-draft", other};
    if (cmd == "batch") a.push_back("hello");
    if (cmd == "serve") a.insert(a.end(), {"--port", "0"});
    const Proc p = offgraph(a);
    EXPECT_EQ(p.code, 1) << cmd << ": " << p.err;
    EXPECT_NE(p.err.find("speculative decoding needs the same tokenizer"), std::string::npos) << p.err;
  }
  // Bad combinations are usage errors.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--draft-max", "3"}, std::vector<std::string>{"--spec", "draft"},
        std::vector<std::string>{"--spec", "ngram", "--model-draft", kGguf}}) {
    std::vector<std::string> a = {"batch", "--model", kGguf, "hello"};
    a.insert(a.end(), extra.begin(), extra.end());
    const Proc p = offgraph(a);
    EXPECT_EQ(p.code, 2) << extra[0] << ": " << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
  }
}

}  // namespace
}  // namespace og::e2e
