// The library and the command agree on an image: og_session_chat with an
// image (offgraph.h og_chat_image) gives the greedy reply `offgraph run
// --image` gives, on og-synth's tiny Gemma 3 with a vision tower. An
// end-to-end test because it runs the command, which the sanitizer tree
// does not build (the C API's other image tests are in tests/api).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "../api/tiny_png.h"
#include "offgraph/offgraph.h"

namespace {

namespace fs = std::filesystem;

struct Dir {
  std::string path = (fs::temp_directory_path() / ("og-e2e-image-lib-" + std::to_string(::getpid()))).string();
  Dir() { fs::create_directories(path); }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string command_output(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[256];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(p ? pclose(p) : -1, 0) << cmd;
  return out;
}

TEST(ImageLibrary, AChatWithAnImageEqualsRunWithTheImage) {
  Dir d;
  const std::string model = d.path + "/m.gguf", mmproj = d.path + "/p.gguf", png = d.path + "/a.png";
  const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth --family gemma3 --vision --format gguf --out '" +
                            model + "' --mmproj-out '" + mmproj + "' > /dev/null";
  ASSERT_EQ(std::system(synth.c_str()), 0) << synth;
  const std::string bytes = og::test::tiny_png(
      40, 30, [](int px, int py) { return static_cast<uint32_t>((px * 7) << 16 | (py * 5) << 8 | (px + py)); });
  std::ofstream(png, std::ios::binary) << bytes;

  og_model_options mo;
  og_model_options_init(&mo);
  mo.mmproj = mmproj.c_str();
  og_model* m = nullptr;
  ASSERT_EQ(og_model_open(model.c_str(), &mo, &m), OG_OK) << og_last_error();
  og_session* s = nullptr;
  ASSERT_EQ(og_session_new(m, nullptr, &s), OG_OK) << og_last_error();
  const og_chat_msg msg{"user", "What is it?", nullptr, nullptr, nullptr, 0, nullptr};
  const og_chat_image image{0, 0, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  og_chat_request q;
  og_chat_request_init(&q);
  q.messages = &msg;
  q.n_messages = 1;
  q.images = &image;
  q.n_images = 1;
  og_generate_options o;
  og_generate_options_init(&o);
  o.max_new_tokens = 12;
  o.sampler.temperature = 0;
  og_chat_result r;
  ASSERT_EQ(og_session_chat(s, &q, &o, &r), OG_OK) << og_last_error();
  const std::string lib(r.generation.text.data ? r.generation.text.data : "", r.generation.text.len);
  og_chat_result_free(&r);
  og_session_free(s);
  og_model_close(m);
  ASSERT_FALSE(lib.empty());

  const std::string run = command_output(std::string(OG_BINARY_DIR) + "/offgraph run -m '" + model + "' --mmproj '" +
                                         mmproj + "' --image '" + png +
                                         "' -p 'What is it?' --max-new-tokens 12 --temperature 0 2>/dev/null");
  EXPECT_EQ(run, lib);
}

}  // namespace
