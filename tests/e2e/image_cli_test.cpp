// Images from the command line (issue 48 item 3): run --image and chat's
// /image on og-synth's tiny Gemma 3 with a vision tower (--vision, its mmproj
// beside it), with PNGs the test writes. The same image gives the same greedy
// reply, chat's image turn equals run's, /undo across an image then the same
// turn again equals the first, and bad images, missing files, a model
// without a tower and --image with --interactive are one line with their exit code.
#include <gtest/gtest.h>

#include <fstream>

#include "../api/tiny_png.h"
#include "e2e_util.h"

namespace og::e2e {
namespace {

struct Files {
  std::string model, mmproj, a, b, truncated;
};

const Files& files() {
  static const Files f = [] {
    Files x;
    const std::string d = scratch_dir();
    x.model = d + "/vision-m.gguf";
    x.mmproj = d + "/vision-p.gguf";
    const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family gemma3 --vision --format gguf --out '" +
                            x.model + "' --mmproj-out '" + x.mmproj + "' > /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::string a = test::tiny_png(40, 30, [](int px, int py) {
      return static_cast<uint32_t>((px * 7) << 16 | (py * 5) << 8 | (px + py));
    });
    x.a = d + "/a.png";
    x.b = d + "/b.png";
    x.truncated = d + "/t.png";
    std::ofstream(x.a, std::ios::binary) << a;
    std::ofstream(x.b, std::ios::binary) << test::tiny_png(40, 30, [](int, int) { return 0xc80a0au; });
    std::ofstream(x.truncated, std::ios::binary) << a.substr(0, 60);
    return x;
  }();
  return f;
}

std::vector<std::string> run_args(const std::vector<std::string>& images) {
  std::vector<std::string> a = {"run", "-m", files().model, "--mmproj", files().mmproj, "-p", "What is it?",
                                "--max-new-tokens", "12", "--temperature", "0", "--quiet"};
  for (const std::string& im : images) {
    a.push_back("--image");
    a.push_back(im);
  }
  return a;
}

TEST(ImageCli, RunWithTheSameImageGivesTheSameReply) {
  const Proc a = offgraph(run_args({files().a})), a2 = offgraph(run_args({files().a}));
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, a2.out);
  const Proc two = offgraph(run_args({files().a, files().b}));
  EXPECT_EQ(two.code, 0) << two.err;
}

TEST(ImageCli, ChatImageTurnEqualsRunAndUndoThenAgainEqualsTheFirst) {
  const Proc run = offgraph(run_args({files().a}));
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string script = "/image " + files().a + "\nWhat is it?\n/undo\n/image " + files().a + "\nWhat is it?\n";
  const Proc chat = offgraph({"chat", "-m", files().model, "--mmproj", files().mmproj, "--max-new-tokens", "12",
                              "--temperature", "0"},
                             script);
  ASSERT_EQ(chat.code, 0) << chat.err;
  // Each reply is a line of its own; run's ends without a newline on a pipe.
  EXPECT_EQ(chat.out, run.out + "\n" + run.out + "\n");
  EXPECT_NE(chat.err.find("[undo: removed the last turn"), std::string::npos) << chat.err;
}

TEST(ImageCli, BadImagesAreOneLineAndExitOne) {
  Proc p = offgraph(run_args({files().truncated}));
  EXPECT_EQ(p.code, 1);
  EXPECT_EQ(p.err, "offgraph run: error: --image " + files().truncated + ": image: png: truncated data\n");
  p = offgraph(run_args({files().model}));
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("image: unknown format"), std::string::npos) << p.err;
  p = offgraph(run_args({scratch_dir() + "/missing.png"}));
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("missing.png"), std::string::npos) << p.err;
  p = offgraph({"run", "-m", files().model, "-p", "x", "--image", files().a});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("this model has no vision tower (pass --mmproj FILE)"), std::string::npos) << p.err;
  p = offgraph({"run", "-m", files().model, "-i", "--image", files().a});
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("/image FILE"), std::string::npos) << p.err;
  // In chat a bad /image is a line and the chat goes on.
  p = offgraph({"chat", "-m", files().model, "--mmproj", files().mmproj, "--max-new-tokens", "2"},
               "/image " + files().truncated + "\n/image\nhi\n");
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("[error: /image " + files().truncated + ": image: png: truncated data]"), std::string::npos)
      << p.err;
  EXPECT_NE(p.err.find("[/image needs a file: /image FILE]"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace og::e2e
