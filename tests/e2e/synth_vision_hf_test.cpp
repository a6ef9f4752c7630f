// og-synth's HF vision directories end to end (issue 48): Gemma 4's
// (--family gemma4 --vision --format hf) runs an image through its own tower
// as the GGUF + mmproj export of it does: the same seeded reply. The rows
// agree within f32 rounding (test_runtime VisionExportGemma4.OgSynthsHfDirectory*),
// which a seeded sample of this tiny model does not feel.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "../api/tiny_png.h"
#include "e2e_util.h"

namespace og::e2e {
namespace {

TEST(SynthVisionHf, Gemma4DirectoryAndItsExportGiveTheSameReply) {
  const std::string d = scratch_dir() + "/g4v-hf";
  const std::string synth =
      std::string(OG_BINARY_DIR) + "/og-synth --family gemma4 --vision --format hf --out '" + d + "' > /dev/null";
  ASSERT_EQ(std::system(synth.c_str()), 0) << synth;
  const Proc e = offgraph({"export", "--model", d, "--out", d + ".gguf", "--dtype", "f32", "--mmproj-out",
                           d + "-mmproj.gguf"});
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string png = d + ".png";
  std::ofstream(png, std::ios::binary) << test::tiny_png(40, 30, [](int px, int py) {
    return static_cast<uint32_t>((px * 6) << 16 | (py * 8) << 8 | (px + 2 * py));
  });
  auto run = [&](const std::string& model, const std::string& mmproj) {
    std::vector<std::string> a = {"run", "-m", model, "-p", "What is it?", "--max-new-tokens", "8",
                                  "--temperature", "1", "--seed", "3", "--quiet", "--image", png};
    if (!mmproj.empty()) a.insert(a.end(), {"--mmproj", mmproj});
    return offgraph(a);
  };
  const Proc own = run(d, ""), exported = run(d + ".gguf", d + "-mmproj.gguf");
  ASSERT_EQ(own.code, 0) << own.err;
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_FALSE(own.out.empty());
  EXPECT_EQ(own.out, exported.out);
  const Proc p = offgraph({"inspect", d});
  EXPECT_NE(p.out.find("gemma4v vision tower"), std::string::npos) << p.out;
}

}  // namespace
}  // namespace og::e2e
