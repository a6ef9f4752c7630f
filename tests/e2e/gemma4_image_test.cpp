// Gemma 4 images end to end (issue 48): og-synth's tiny Gemma 4 with a gemma4v
// mmproj (--family gemma4 --vision), PNGs the test writes. run --image puts
// each image as <|image> + one <|image|> per soft token + <image|>, the count
// following the image's aspect (transformers' Gemma 4 processor: the largest
// size of at most 280 * 3 * 3 patches of 4 pixels, sides multiples of 12);
// the same image gives the same greedy text, another image other text, and
// inspect describes the gemma4v file.
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
  std::string model, mmproj, wide, flat, red;
};

const Files& files() {
  static const Files f = [] {
    Files x;
    const std::string d = scratch_dir();
    x.model = d + "/g4v-m.gguf";
    x.mmproj = d + "/g4v-p.gguf";
    const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family gemma4 --vision --format gguf --out '" +
                            x.model + "' --mmproj-out '" + x.mmproj + "' > /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    x.wide = d + "/g4v-wide.png";  // 40 x 30: 14 x 19 = 266 soft tokens
    x.flat = d + "/g4v-flat.png";  // 60 x 20: 9 x 28 = 252 soft tokens
    x.red = d + "/g4v-red.png";    // 40 x 30, one colour
    std::ofstream(x.wide, std::ios::binary) << test::tiny_png(40, 30, [](int px, int py) {
      return static_cast<uint32_t>((px * 7) << 16 | (py * 5) << 8 | (px + py));
    });
    std::ofstream(x.flat, std::ios::binary) << test::tiny_png(60, 20, [](int px, int py) {
      return static_cast<uint32_t>((py * 11) << 16 | (px * 3) << 8 | 0x40);
    });
    std::ofstream(x.red, std::ios::binary) << test::tiny_png(40, 30, [](int, int) { return 0xc80a0au; });
    return x;
  }();
  return f;
}

std::vector<std::string> run_args(const std::vector<std::string>& images, bool quiet) {
  std::vector<std::string> a = {"run", "-m", files().model, "--mmproj", files().mmproj, "-p", "What is it?",
                                "--max-new-tokens", "12", "--temperature", "0"};
  if (quiet) a.push_back("--quiet");
  for (const std::string& im : images) {
    a.push_back("--image");
    a.push_back(im);
  }
  return a;
}

// The prompt's token count from run's [stats] line (-1 when absent).
int prompt_tokens(const Proc& p) {
  std::smatch m;
  if (!std::regex_search(p.err, m, std::regex(R"(\[stats\] prompt tokens: (\d+))"))) return -1;
  return std::stoi(m[1].str());
}

TEST(Gemma4Image, EachImageIsItsRunOfSoftTokensBetweenItsTokens) {
  const Proc text = offgraph(run_args({}, false));
  ASSERT_EQ(text.code, 0) << text.err;
  const int base = prompt_tokens(text);
  ASSERT_GT(base, 0) << text.err;
  const Proc wide = offgraph(run_args({files().wide}, false));
  ASSERT_EQ(wide.code, 0) << wide.err;
  EXPECT_NE(wide.err.find("[vision] gemma4v vision tower"), std::string::npos) << wide.err;
  EXPECT_EQ(prompt_tokens(wide), base + 1 + 266 + 1) << wide.err;  // <|image>, 266 x <|image|>, <image|>
  const Proc flat = offgraph(run_args({files().flat}, false));
  ASSERT_EQ(flat.code, 0) << flat.err;
  EXPECT_EQ(prompt_tokens(flat), base + 1 + 252 + 1) << flat.err;
  const Proc both = offgraph(run_args({files().wide, files().flat}, false));
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(prompt_tokens(both), base + 268 + 254) << both.err;
}

TEST(Gemma4Image, TheSameImageGivesTheSameTextAnotherImageOther) {
  const Proc a = offgraph(run_args({files().wide}, true)), a2 = offgraph(run_args({files().wide}, true));
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(a2.code, 0) << a2.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, a2.out);
  // The same size, other pixels: the same token count, so only the rows differ.
  const Proc red = offgraph(run_args({files().red}, true));
  ASSERT_EQ(red.code, 0) << red.err;
  EXPECT_NE(red.out, a.out);
  const Proc text = offgraph(run_args({}, true));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out, a.out);
}

TEST(Gemma4Image, InspectDescribesTheGemma4vFile) {
  const Proc p = offgraph({"inspect", files().mmproj});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("vision tower:  llama.cpp mmproj, projector gemma4v"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("image of any size (aspect kept), patch 4, 2 layers, width 32, 4 heads, feed-forward 64"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("at most 280 tokens per image, projection width 128"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("loads with --mmproj"), std::string::npos) << p.out;
  const Proc j = offgraph({"inspect", files().mmproj, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json v = nlohmann::json::parse(j.out)["vision"];
  EXPECT_EQ(v["projector_type"], "gemma4v");
  EXPECT_EQ(v["tokens_per_image"], 280);
  EXPECT_EQ(v["variable_size"], true);
  EXPECT_EQ(v["loads"], true);
  const Proc m = offgraph({"inspect", files().model, "--mmproj", files().mmproj});
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("gemma4v vision tower: patch 4"), std::string::npos) << m.out;
}

TEST(Gemma4Image, OgSynthRefusesAnotherTokenizer) {
  const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth --family gemma4 --vision ";
  const std::string out = scratch_dir() + "/g4v-refused";
  EXPECT_EQ(
      WEXITSTATUS(std::system((synth + "--format gguf --tokenizer stories --out '" + out + "' 2> /dev/null").c_str())),
      2);
}

}  // namespace
}  // namespace og::e2e
