// Loading a vision tower from the command line (docs/vision.md "Loading a
// tower"): og-synth --vision writes a tiny Gemma 3 vision model and its mmproj;
// inspect describes the mmproj and a model's tower; run takes --mmproj and
// refuses a bad one with one line and exit 1; export --mmproj-out writes the
// tower that inspect and run read back; --no-mmproj, and bench's row for an HF
// directory's tower. Needs offgraph and og-synth (OG_BINARY_DIR).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../api/tiny_png.h"
#include "e2e_util.h"
#include "temp_dir.h"

namespace og::e2e {
namespace {

// og-synth args... : its exit code; stderr in *err.
int og_synth(const std::string& args, std::string* err) {
  const std::string err_path = scratch_dir() + "/vision_synth.err";
  const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth " + args + " > /dev/null 2> " + err_path;
  const int rc = std::system(cmd.c_str());
  *err = slurp(err_path);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

struct Files {
  Files() {
    std::string err;
    EXPECT_EQ(og_synth("--family gemma3 --vision --format gguf --out " + gguf() + " --mmproj-out " + mmproj(), &err),
              0)
        << err;
    EXPECT_EQ(og_synth("--family gemma3 --vision --format hf --out " + hf(), &err), 0) << err;
  }
  std::string gguf() const { return dir.path("m.gguf"); }
  std::string mmproj() const { return dir.path("mmproj.gguf"); }
  std::string hf() const { return dir.path("hf"); }
  std::string path(const std::string& n) const { return dir.path(n); }
  og::test::TempDir dir;
};

const Files& files() {
  static const Files f;
  return f;
}

TEST(VisionLoad, InspectDescribesAnMmprojFile) {
  const Proc p = offgraph({"inspect", files().mmproj()});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("architecture:  clip"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("vision tower:  llama.cpp mmproj, projector gemma3"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("image 56x56 pixels, patch 14, 2 layers, width 32, 4 heads, feed-forward 64"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("4 tokens per image, projection width 64"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("mean 0.5, 0.5, 0.5; std 0.5, 0.5, 0.5"), std::string::npos) << p.out;
  const Proc j = offgraph({"inspect", files().mmproj(), "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json v = nlohmann::json::parse(j.out)["vision"];
  EXPECT_EQ(v["projector_type"], "gemma3");
  EXPECT_EQ(v["tokens_per_image"], 4);
  EXPECT_EQ(v["projection_width"], 64);
  EXPECT_EQ(v["layers"], 2);
  EXPECT_EQ(v["loads"], true);
}

TEST(VisionLoad, InspectOfAModelNamesItsTower) {
  const std::string line =
      "vision:        gemma3 vision tower: 56x56 pixels, patch 14, 2 layers, width 32, 4 heads, 4 tokens per image, "
      "projection width 64";
  const Proc with = offgraph({"inspect", files().gguf(), "--mmproj", files().mmproj()});
  ASSERT_EQ(with.code, 0) << with.err;
  EXPECT_NE(with.out.find(line + " (from " + files().mmproj() + ")"), std::string::npos) << with.out;
  const Proc hf = offgraph({"inspect", files().hf()});
  ASSERT_EQ(hf.code, 0) << hf.err;
  EXPECT_NE(hf.out.find(line + " (from " + files().hf() + ")"), std::string::npos) << hf.out;
  const Proc text = offgraph({"inspect", files().gguf()});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out.find("vision:"), std::string::npos) << text.out;
  // --mmproj beside an mmproj file is bad usage.
  EXPECT_EQ(offgraph({"inspect", files().mmproj(), "--mmproj", files().mmproj()}).code, 2);
}

TEST(VisionLoad, RunTakesMmprojAndRefusesABadOneInOneLine) {
  const Proc ok = offgraph({"run", "-m", files().gguf(), "--mmproj", files().mmproj(), "-p", "hi", "-n", "2"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.err.find("[vision] gemma3 vision tower: 56x56 pixels, patch 14, 2 layers, width 32, 4 heads, 4 tokens "
                        "per image, projection width 64 (from " + files().mmproj() + ")"),
            std::string::npos)
      << ok.err;
  const std::string text_model = files().gguf();
  struct Bad {
    std::string mmproj, words;
  } bad[] = {
      {files().path("missing.gguf"), ": no such file"},
      {files().hf() + "/config.json", ": not a GGUF file"},
      {text_model, "not an mmproj (clip) file: clip.projector_type is missing (general.architecture is gemma3)"},
  };
  for (const Bad& b : bad) {
    const Proc p = offgraph({"run", "-m", text_model, "--mmproj", b.mmproj, "-p", "hi", "-n", "1", "-q"});
    EXPECT_EQ(p.code, 1) << b.mmproj;
    EXPECT_NE(p.err.find("offgraph run: error: --mmproj " + b.mmproj), std::string::npos) << p.err;
    EXPECT_NE(p.err.find(b.words), std::string::npos) << p.err;
    EXPECT_EQ(count(p.err, "\n"), 1u) << p.err;
  }
}

// --no-mmproj (llama.cpp's): an HF directory loads without its own tower, so
// an image is refused as by a text model while text runs; with --mmproj it is
// a contradiction in one line. Every command that takes --mmproj takes it.
TEST(VisionLoad, NoMmprojLoadsAnHfDirectoryWithoutItsTower) {
  const std::string png = files().path("no-mmproj.png");
  std::ofstream(png, std::ios::binary) << test::tiny_png(20, 14, [](int x, int y) { return static_cast<uint32_t>(x * 9 + y); });
  const std::vector<std::string> ask = {"run", "-m", files().hf(), "--image", png, "-p", "What is it?", "-n", "2"};
  const Proc with = offgraph(ask);
  EXPECT_EQ(with.code, 0) << with.err;
  EXPECT_NE(with.err.find("[vision] gemma3 vision tower"), std::string::npos) << with.err;
  std::vector<std::string> without = ask;
  without.push_back("--no-mmproj");
  const Proc refused = offgraph(without);
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_NE(refused.err.find("this model has no vision tower"), std::string::npos) << refused.err;
  EXPECT_EQ(count(refused.err, "\n"), 1u) << refused.err;
  const Proc text = offgraph({"run", "-m", files().hf(), "--no-mmproj", "-p", "hi", "-n", "2"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.err.find("[vision]"), std::string::npos) << text.err;
  const Proc both = offgraph({"run", "-m", files().gguf(), "--mmproj", files().mmproj(), "--no-mmproj", "-p", "hi"});
  EXPECT_EQ(both.code, 1) << both.err;
  EXPECT_NE(both.err.find("--mmproj " + files().mmproj() + " and --no-mmproj contradict each other"),
            std::string::npos)
      << both.err;
  EXPECT_EQ(count(both.err, "\n"), 1u) << both.err;
  for (const char* cmd : {"run", "chat", "batch", "serve", "bench"}) {
    const Proc h = offgraph({cmd, "--help"});
    EXPECT_NE(h.out.find("--no-mmproj"), std::string::npos) << cmd;
  }
}

// bench's image-encode row for an HF directory's own tower (no --mmproj);
// --no-mmproj leaves nothing to measure at -p 0 -n 0.
TEST(VisionLoad, BenchTimesAnHfDirectorysOwnTower) {
  const Proc p = offgraph({"bench", "--model", files().hf(), "-p", "0", "-n", "0", "-r", "1", "-t", "1", "--json"});
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  ASSERT_EQ(j["image_encode"].size(), 1u) << p.out;
  EXPECT_GT(j["image_encode"][0]["images_per_s"].get<double>(), 0);
  const Proc off = offgraph({"bench", "--model", files().hf(), "--no-mmproj", "-p", "0", "-n", "0"});
  EXPECT_NE(off.code, 0);
  EXPECT_NE(off.err.find("nothing to measure"), std::string::npos) << off.err;
  EXPECT_EQ(count(off.err, "\n"), 1u) << off.err;
}

TEST(VisionLoad, ExportWritesTheTowerAsAnMmproj) {
  const std::string out = files().path("exported-mmproj.gguf");
  const Proc e = offgraph({"export", "--model", files().hf(), "--mmproj-out", out, "--dtype", "f32"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.err.find("gemma3 vision tower (mmproj), 2 layers, 56x56 pixels, 4 tokens per image, matrices f32"),
            std::string::npos)
      << e.err;
  const Proc i = offgraph({"inspect", out});
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.out.find("projector gemma3"), std::string::npos) << i.out;
  const Proc run = offgraph({"run", "-m", files().gguf(), "--mmproj", out, "-p", "hi", "-n", "1", "-q"});
  EXPECT_EQ(run.code, 0) << run.err;
  // Again without --force: refused, the file kept.
  const Proc again = offgraph({"export", "--model", files().hf(), "--mmproj-out", out});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  // A checkpoint without a tower: refused before the text model is written.
  std::string err;
  ASSERT_EQ(og_synth("--family gemma3 --format hf --out " + files().path("text-hf"), &err), 0) << err;
  const std::string text_out = files().path("text.gguf");
  const Proc none =
      offgraph({"export", "--model", files().path("text-hf"), "--out", text_out, "--mmproj-out", files().path("n.gguf")});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("--mmproj-out: the model has no vision tower (config.json has no vision_config)"),
            std::string::npos)
      << none.err;
  EXPECT_FALSE(std::filesystem::exists(text_out));
}

TEST(VisionLoad, SynthVisionUsageErrors) {
  std::string err;
  EXPECT_EQ(og_synth("--family qwen3 --vision --format gguf --out " + files().path("x.gguf"), &err), 2);
  EXPECT_NE(err.find("--vision needs --family gemma3"), std::string::npos) << err;
  EXPECT_EQ(og_synth("--family gemma3 --format gguf --out " + files().path("x.gguf") + " --mmproj-out " +
                         files().path("y.gguf"),
                     &err),
            2);
  EXPECT_NE(err.find("--mmproj-out needs --vision"), std::string::npos) << err;
}

}  // namespace
}  // namespace og::e2e
