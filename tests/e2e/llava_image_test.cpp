// LLaVA-style images end to end (issue 48): og-synth's tiny llama with a CLIP
// tower and MLP projector as an "mlp" mmproj (--family llama --vision), PNGs
// the test writes. Each image part becomes 16 <image> tokens (4 x 4 patches,
// the class token dropped); the same image gives the same (seeded) reply,
// another image another one; inspect describes the mlp file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "../api/tiny_png.h"
#include "e2e_util.h"

namespace og::e2e {
namespace {

struct Files {
  std::string model, mmproj, a, b;
};

const Files& files() {
  static const Files f = [] {
    Files x;
    const std::string d = scratch_dir();
    x.model = d + "/llava-m.gguf";
    x.mmproj = d + "/llava-p.gguf";
    const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family llama --vision --format gguf --out '" +
                            x.model + "' --mmproj-out '" + x.mmproj + "' > /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    x.a = d + "/llava-a.png";
    x.b = d + "/llava-b.png";
    std::ofstream(x.a, std::ios::binary) << test::tiny_png(40, 30, [](int px, int py) {
      return static_cast<uint32_t>((px * 7) << 16 | (py * 5) << 8 | (px + py));
    });
    std::ofstream(x.b, std::ios::binary) << test::tiny_png(40, 30, [](int, int) { return 0xc80a0au; });
    return x;
  }();
  return f;
}

// Sampled with a fixed seed: this tiny model's greedy reply is one token
// repeated whatever the image, a seeded sample follows the logits.
std::vector<std::string> run_args(const std::vector<std::string>& images, bool quiet) {
  std::vector<std::string> a = {"run", "-m", files().model, "--mmproj", files().mmproj, "-p", "What is it?",
                                "--max-new-tokens", "16", "--temperature", "1", "--seed", "7"};
  if (quiet) a.push_back("--quiet");
  for (const std::string& im : images) {
    a.push_back("--image");
    a.push_back(im);
  }
  return a;
}

int prompt_tokens(const Proc& p) {
  std::smatch m;
  if (!std::regex_search(p.err, m, std::regex(R"(\[stats\] prompt tokens: (\d+))"))) return -1;
  return std::stoi(m[1].str());
}

TEST(LlavaImage, EachImageIsSixteenImageTokens) {
  const Proc text = offgraph(run_args({}, false));
  ASSERT_EQ(text.code, 0) << text.err;
  const int base = prompt_tokens(text);
  ASSERT_GT(base, 0) << text.err;
  const Proc one = offgraph(run_args({files().a}, false));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.err.find("[vision] mlp vision tower"), std::string::npos) << one.err;
  // 16 x <image>, then the template's "\n" after it ("▁", "<0x0A>" in the stories vocabulary).
  EXPECT_EQ(prompt_tokens(one), base + 16 + 2) << one.err;
  const Proc two = offgraph(run_args({files().a, files().b}, false));
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(prompt_tokens(two), base + 2 * (16 + 2)) << two.err;
}

TEST(LlavaImage, TheSameImageGivesTheSameReplyAnotherImageAnother) {
  const Proc a = offgraph(run_args({files().a}, true)), a2 = offgraph(run_args({files().a}, true));
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, a2.out);
  const Proc b = offgraph(run_args({files().b}, true));
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.out, a.out);
}

TEST(LlavaImage, InspectDescribesTheMlpFile) {
  const Proc p = offgraph({"inspect", files().mmproj});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("vision tower:  llama.cpp mmproj, projector mlp"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("image 28x28 pixels, patch 7, 2 layers, width 32, 4 heads, feed-forward 64"), std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("16 tokens per image"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("loads with --mmproj"), std::string::npos) << p.out;
  const nlohmann::json v = nlohmann::json::parse(offgraph({"inspect", files().mmproj, "--json"}).out)["vision"];
  EXPECT_EQ(v["projector_type"], "mlp");
  EXPECT_EQ(v["tokens_per_image"], 16);
  EXPECT_EQ(v["variable_size"], false);
}

}  // namespace
}  // namespace og::e2e
