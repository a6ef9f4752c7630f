// LLaVA's HF directory end to end (issue 48): og-synth --family llama
// --vision --format hf writes a LlavaForConditionalGeneration directory;
// `offgraph export --mmproj-out` turns it into a text GGUF and an mlp mmproj;
// run --image on the directory (its own tower, CLIPImageProcessor settings)
// and on the export (--mmproj, llama.cpp's letterbox) give the same reply
// for a square picture, where both preprocessings give the same pixels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "../api/tiny_png.h"
#include "e2e_util.h"

namespace og::e2e {
namespace {

struct Files {
  std::string dir, model, mmproj, square;
};

const Files& files() {
  static const Files f = [] {
    Files x;
    const std::string d = scratch_dir();
    x.dir = d + "/llava-hf";
    x.model = d + "/llava-hf.gguf";
    x.mmproj = d + "/llava-hf-mmproj.gguf";
    const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth --family llama --vision --format hf --out '" +
                              x.dir + "' > /dev/null";
    EXPECT_EQ(std::system(synth.c_str()), 0) << synth;
    const Proc e = offgraph({"export", "--model", x.dir, "--out", x.model, "--dtype", "f32", "--mmproj-out", x.mmproj});
    EXPECT_EQ(e.code, 0) << e.err;
    EXPECT_NE(e.err.find("mlp vision tower (mmproj), 2 layers, 28x28 pixels, 16 tokens per image, matrices f32"),
              std::string::npos)
        << e.err;
    x.square = d + "/llava-hf-square.png";
    std::ofstream(x.square, std::ios::binary) << test::tiny_png(56, 56, [](int px, int py) {
      return static_cast<uint32_t>((px * 5) << 16 | (py * 3) << 8 | (px ^ py));
    });
    return x;
  }();
  return f;
}

std::vector<std::string> run_args(const std::string& model, const std::string& mmproj) {
  std::vector<std::string> a = {"run",  "-m", model, "-p", "What is it?", "--max-new-tokens", "12", "--temperature",
                                "1", "--seed", "5", "--quiet", "--image", files().square};
  if (!mmproj.empty()) a.insert(a.end(), {"--mmproj", mmproj});
  return a;
}

TEST(LlavaHfImage, TheDirectoryAndItsExportGiveTheSameReply) {
  const Proc own = offgraph(run_args(files().dir, ""));
  ASSERT_EQ(own.code, 0) << own.err;
  EXPECT_FALSE(own.out.empty());
  const Proc exported = offgraph(run_args(files().model, files().mmproj));
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_EQ(own.out, exported.out);
  // Without the image the reply differs (the image reached the model).
  std::vector<std::string> text = run_args(files().dir, "");
  text.resize(text.size() - 2);
  const Proc plain = offgraph(text);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out, own.out);
}

TEST(LlavaHfImage, InspectOfTheDirectoryNamesItsTower) {
  const Proc p = offgraph({"inspect", files().dir});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("mlp vision tower: 28x28 pixels, patch 7, 2 layers"), std::string::npos) << p.out;
}

TEST(LlavaHfImage, ExportRefusesProcessorSettingsTheTowerCannotTake) {
  const std::string d = scratch_dir() + "/llava-hf-broken";
  const std::string synth =
      std::string(OG_BINARY_DIR) + "/og-synth --family llama --vision --format hf --out '" + d + "' > /dev/null";
  ASSERT_EQ(std::system(synth.c_str()), 0);
  std::ofstream(d + "/preprocessor_config.json") << R"({"crop_size": {"height": 224, "width": 224}})";
  const Proc e = offgraph({"export", "--model", d, "--out", d + "/m.gguf", "--mmproj-out", d + "/p.gguf"});
  EXPECT_EQ(e.code, 1);
  EXPECT_FALSE(std::ifstream(d + "/m.gguf").good());  // refused before the text export too
  EXPECT_NE(e.err.find("crop_size 224x224 is not the vision tower's image_size 28"), std::string::npos) << e.err;
  EXPECT_FALSE(std::ifstream(d + "/p.gguf").good());
}

}  // namespace
}  // namespace og::e2e
