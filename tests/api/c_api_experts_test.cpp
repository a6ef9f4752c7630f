// og_model_options.experts_in_memory on a mixture of experts (og-synth's tiny
// qwen3moe, written by the og-synth binary at test time): by default the
// expert matrices stay in the mapped file (og_model_info counts them as
// mapped), with the option they are copied with the dense part, with mmap
// nothing is copied; greedy text is the same every way.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "api/api_test_util.h"

namespace og_test {
namespace {

namespace fs = std::filesystem;

// The directory of the synthetic file, removed when the process ends.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("og-api-experts-" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The synthetic file, written once per process; "" when og-synth failed.
const std::string& moe_file() {
  static const ScratchDir scratch;
  static const std::string path = [] {
    const fs::path& dir = scratch.path;
    const std::string out = (dir / "qwen3moe.gguf").string();
    const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family qwen3moe --format gguf --out '" + out +
                            "' > /dev/null";
    return std::system(cmd.c_str()) == 0 ? out : std::string();
  }();
  return path;
}

struct Opened {
  og_model_info info{};
  std::string text;
};

Opened open_with(int mmap, int experts_in_memory) {
  og_model_options o;
  og_model_options_init(&o);
  EXPECT_EQ(o.experts_in_memory, 0);
  o.mmap = mmap;
  o.experts_in_memory = experts_in_memory;
  o.chat_template = "0";
  og_model* m = nullptr;
  Opened r;
  EXPECT_EQ(og_model_open(moe_file().c_str(), &o, &m), OG_OK) << og_last_error();
  if (!m) return r;
  EXPECT_EQ(og_model_get_info(m, &r.info), OG_OK);
  og_session* s = nullptr;
  EXPECT_EQ(og_session_new(m, nullptr, &s), OG_OK) << og_last_error();
  og_tokens t{};
  EXPECT_EQ(og_tokenize(m, kPrompt.c_str(), kPrompt.size(), 1, 0, &t), OG_OK);
  og_generation g{};
  const og_generate_options go = greedy(12);
  EXPECT_EQ(og_session_generate(s, t.ids, t.n, &go, &g), OG_OK) << og_last_error();
  r.text = text_of(g);
  og_generation_free(&g);
  og_tokens_free(&t);
  og_session_free(s);
  og_model_close(m);
  return r;
}

TEST(CApiExperts, InMemoryCopiesTheExpertsMappedLeavesThem) {
  ASSERT_FALSE(moe_file().empty()) << "og-synth could not write the test model";
  const Opened mapped = open_with(0, 0), copied = open_with(0, 1), none = open_with(1, 0);
  EXPECT_GT(mapped.info.weights_mapped_expert_bytes, 0);
  EXPECT_GT(mapped.info.weights_copied_bytes, 0);  // the dense part
  EXPECT_EQ(copied.info.weights_mapped_expert_bytes, 0);
  EXPECT_EQ(copied.info.weights_copied_bytes,
            mapped.info.weights_copied_bytes + mapped.info.weights_mapped_expert_bytes);
  EXPECT_EQ(none.info.weights_copied_bytes, 0);
  EXPECT_FALSE(mapped.text.empty());
  EXPECT_EQ(copied.text, mapped.text);
  EXPECT_EQ(none.text, mapped.text);
}

}  // namespace
}  // namespace og_test
