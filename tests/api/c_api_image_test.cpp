// Images through the C API (offgraph.h og_chat_image, og_session_append_image)
// on og-synth's tiny Gemma 3 with a vision tower (its mmproj GGUF beside it):
// the same image gives the same logits and another image others; undo
// across an image then the same request equals a fresh session; bad images, bad
// places and a model without a tower are OG_ERR_INVALID_ARGUMENT naming the
// image. Test images are written by the test (tiny_png.h). That a chat with
// an image equals `offgraph run --image` is an end-to-end test
// (tests/e2e/image_library_test.cpp): the sanitizer tree builds no command.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "offgraph/offgraph.h"
#include "offgraph/offgraph.hpp"
#include "tiny_png.h"

namespace {

namespace fs = std::filesystem;

struct Files {
  std::string dir, model, mmproj, png_a, png_b;
  std::string a, b;  // the PNGs' bytes
};

const Files& files() {
  static const Files f = [] {
    Files x;
    x.dir = (fs::temp_directory_path() / ("og-api-image-" + std::to_string(::getpid()))).string();
    fs::create_directories(x.dir);
    x.model = x.dir + "/m.gguf";
    x.mmproj = x.dir + "/p.gguf";
    const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family gemma3 --vision --format gguf --out '" +
                            x.model + "' --mmproj-out '" + x.mmproj + "' > /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    x.a = og::test::tiny_png(40, 30, [](int px, int py) { return static_cast<uint32_t>((px * 7) << 16 | (py * 5) << 8 | (px + py)); });
    x.b = og::test::tiny_png(40, 30, [](int, int) { return 0xc80a0au; });
    x.png_a = x.dir + "/a.png";
    x.png_b = x.dir + "/b.png";
    std::ofstream(x.png_a, std::ios::binary) << x.a;
    std::ofstream(x.png_b, std::ios::binary) << x.b;
    return x;
  }();
  return f;
}

class ImageApiTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(files().dir, ec);
  }
  void SetUp() override {
    og_model_options o;
    og_model_options_init(&o);
    o.mmproj = files().mmproj.c_str();
    ASSERT_EQ(og_model_open(files().model.c_str(), &o, &model_), OG_OK) << og_last_error();
  }
  void TearDown() override {
    for (og_session* s : sessions_) og_session_free(s);
    og_model_close(model_);
  }
  og_session* session() {
    og_session* s = nullptr;
    EXPECT_EQ(og_session_new(model_, nullptr, &s), OG_OK) << og_last_error();
    sessions_.push_back(s);
    return s;
  }
  static og_chat_image image(const std::string& bytes, size_t message = 0, size_t offset = 0) {
    return og_chat_image{message, offset, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  }
  // One greedy user turn "What is it?" with `images`; the reply's text ("" on an error).
  std::string ask(og_session* s, const std::vector<og_chat_image>& images, og_status want = OG_OK) {
    const og_chat_msg msg{"user", "What is it?", nullptr, nullptr, nullptr, 0, nullptr};
    og_chat_request q;
    og_chat_request_init(&q);
    q.messages = &msg;
    q.n_messages = 1;
    q.images = images.data();
    q.n_images = images.size();
    og_generate_options o;
    og_generate_options_init(&o);
    o.max_new_tokens = 12;
    o.sampler.temperature = 0;
    og_chat_result r;
    const og_status st = og_session_chat(s, &q, &o, &r);
    EXPECT_EQ(st, want) << og_last_error();
    std::string text = r.generation.text.data ? std::string(r.generation.text.data, r.generation.text.len) : "";
    og_chat_result_free(&r);
    return text;
  }
  std::vector<float> image_logits(const std::string& bytes) {
    og_session* s = session();
    EXPECT_EQ(og_session_append_image(s, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), OG_OK)
        << og_last_error();
    EXPECT_EQ(og_session_prefill(s, nullptr, 0, 1), OG_OK) << og_last_error();
    const float* l = nullptr;
    size_t n = 0;
    EXPECT_EQ(og_session_logits(s, &l, &n), OG_OK) << og_last_error();
    return std::vector<float>(l, l + n);
  }
  og_model* model_ = nullptr;
  std::vector<og_session*> sessions_;
};

TEST_F(ImageApiTest, TheSameImageGivesTheSameLogitsAndAnotherOthers) {
  const std::vector<float> a = image_logits(files().a), a2 = image_logits(files().a), b = image_logits(files().b);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == a2);
  EXPECT_FALSE(a == b);
  EXPECT_EQ(ask(session(), {image(files().a)}), ask(session(), {image(files().a)}));
}

TEST_F(ImageApiTest, UndoAcrossAnImageThenTheSameRequestEqualsFresh) {
  const std::string fresh = ask(session(), {image(files().a)});
  og_session* s = session();
  ask(s, {image(files().b)});
  ASSERT_EQ(og_session_undo(s), OG_OK) << og_last_error();
  int64_t pos = -1;
  ASSERT_EQ(og_session_position(s, &pos), OG_OK);
  EXPECT_EQ(pos, 0);
  EXPECT_EQ(ask(s, {image(files().a)}), fresh);
  // The next turn with the other image keeps only the text before it.
  EXPECT_EQ(ask(s, {image(files().b)}).empty(), false);
}

TEST_F(ImageApiTest, BadImagesAndPlacesNameTheImage) {
  og_session* s = session();
  const std::string truncated = files().a.substr(0, 60);
  ask(s, {image(truncated)}, OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("'images[0]': image: png: truncated data"), std::string::npos)
      << og_last_error();
  ask(s, {image(files().a), image("not an image at all")}, OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("'images[1]': image: unknown format"), std::string::npos)
      << og_last_error();
  ask(s, {image(files().a, 1)}, OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("'images[0].message' is 1: the request has 1 messages"),
            std::string::npos)
      << og_last_error();
  ask(s, {image("")}, OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("has no bytes"), std::string::npos) << og_last_error();
  int64_t pos = -1;
  ASSERT_EQ(og_session_position(s, &pos), OG_OK);
  EXPECT_EQ(pos, 0);  // nothing changed
  EXPECT_EQ(og_session_append_image(s, reinterpret_cast<const uint8_t*>(truncated.data()), truncated.size()),
            OG_ERR_INVALID_ARGUMENT);
  // An offset places the image inside the text, never inside a character.
  const og_chat_msg msg{"user", "caf\xc3\xa9", nullptr, nullptr, nullptr, 0, nullptr};
  const og_chat_image mid = image(files().a, 0, 4);
  og_chat_request q;
  og_chat_request_init(&q);
  q.messages = &msg;
  q.n_messages = 1;
  q.images = &mid;
  q.n_images = 1;
  og_chat_result r;
  EXPECT_EQ(og_session_chat(s, &q, nullptr, &r), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("'images[0].offset' is 4: inside a UTF-8 character"),
            std::string::npos)
      << og_last_error();
  og_chat_result_free(&r);
}

TEST_F(ImageApiTest, AModelWithoutATowerRefusesImages) {
  og_model* text = nullptr;
  ASSERT_EQ(og_model_open(files().model.c_str(), nullptr, &text), OG_OK) << og_last_error();
  og_session* s = nullptr;
  ASSERT_EQ(og_session_new(text, nullptr, &s), OG_OK);
  sessions_.push_back(s);
  ask(s, {image(files().a)}, OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("this model has no vision tower (pass --mmproj FILE)"),
            std::string::npos)
      << og_last_error();
  og_model_close(text);
}

// og_model_options.no_mmproj (--no-mmproj): an HF directory opens without its
// own tower, so an image is refused as by a text model; with mmproj it is a
// contradiction, refused before anything loads.
TEST_F(ImageApiTest, NoMmprojOpensAnHfDirectoryWithoutItsTower) {
  const std::string hf = files().dir + "/hf";
  const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family gemma3 --vision --format hf --out '" + hf +
                          "' > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto* png = reinterpret_cast<const uint8_t*>(files().a.data());
  for (int no : {0, 1}) {
    og_model_options o;
    og_model_options_init(&o);
    EXPECT_EQ(o.no_mmproj, 0);
    o.no_mmproj = no;
    og_model* m = nullptr;
    ASSERT_EQ(og_model_open(hf.c_str(), &o, &m), OG_OK) << og_last_error();
    og_session* s = nullptr;
    ASSERT_EQ(og_session_new(m, nullptr, &s), OG_OK) << og_last_error();
    const og_status st = og_session_append_image(s, png, files().a.size());
    if (no) {
      EXPECT_EQ(st, OG_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(og_last_error()).find("no vision tower"), std::string::npos) << og_last_error();
    } else {
      EXPECT_EQ(st, OG_OK) << og_last_error();
    }
    og_session_free(s);
    og_model_close(m);
  }
  og_model_options o;
  og_model_options_init(&o);
  o.mmproj = files().mmproj.c_str();
  o.no_mmproj = 1;
  og_model* m = nullptr;
  EXPECT_EQ(og_model_open(files().model.c_str(), &o, &m), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("and no_mmproj contradict each other"), std::string::npos)
      << og_last_error();
}

// A fork carries the image whole: the same next token gives the same logits in both.
TEST_F(ImageApiTest, AForkKeepsTheImage) {
  og_session* s = session();
  ASSERT_EQ(og_session_append_image(s, reinterpret_cast<const uint8_t*>(files().a.data()), files().a.size()), OG_OK);
  ASSERT_EQ(og_session_prefill(s, nullptr, 0, 0), OG_OK);
  og_session* f = nullptr;
  ASSERT_EQ(og_session_fork(s, &f), OG_OK) << og_last_error();
  sessions_.push_back(f);
  const int32_t next[] = {7};
  std::vector<float> got[2];
  og_session* both[] = {s, f};
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(og_session_prefill(both[i], next, 1, 1), OG_OK) << og_last_error();
    const float* l = nullptr;
    size_t n = 0;
    ASSERT_EQ(og_session_logits(both[i], &l, &n), OG_OK);
    got[i].assign(l, l + n);
  }
  EXPECT_TRUE(got[0] == got[1]);
  // A rewind keeps or drops the image whole: into it is out of range, naming its ends.
  int64_t pos = 0;
  ASSERT_EQ(og_session_position(s, &pos), OG_OK);
  og_tokens h{};
  ASSERT_EQ(og_session_history(s, &h), OG_OK);
  int64_t inside = 0;  // the second of the image's four placeholders
  for (size_t i = 1; i + 2 < h.n && inside == 0; ++i)
    if (h.ids[i - 1] == h.ids[i] && h.ids[i] == h.ids[i + 1] && h.ids[i] == h.ids[i + 2]) inside = static_cast<int64_t>(i);
  og_tokens_free(&h);
  ASSERT_GT(inside, 0);
  EXPECT_EQ(og_session_rewind(s, inside), OG_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(og_last_error()).find("is inside an image"), std::string::npos) << og_last_error();
  int64_t after = 0;
  ASSERT_EQ(og_session_position(s, &after), OG_OK);
  EXPECT_EQ(after, pos);
  EXPECT_EQ(og_session_rewind(s, 0), OG_OK);
}

// offgraph.hpp: ChatRequest::images and Session::append_image reach the same calls.
TEST_F(ImageApiTest, TheCppWrapperTakesImages) {
  og_model_options o;
  og_model_options_init(&o);
  o.mmproj = files().mmproj.c_str();
  offgraph::Model model(files().model, &o);
  offgraph::Session session = model.session();
  offgraph::ChatRequest req;
  req.messages.push_back({"user", "What is it?", {}, {}, {}, {}});
  req.images.push_back({0, 0, files().a});
  og_generate_options g;
  og_generate_options_init(&g);
  g.max_new_tokens = 12;
  g.sampler.temperature = 0;
  const offgraph::ChatResult r = session.chat(req, g);
  EXPECT_EQ(std::string(r.generation.text), ask(this->session(), {image(files().a)}));
  offgraph::Session raw = model.session();
  raw.append_image(files().b);
  raw.prefill({}, true);
  const std::vector<float> b = image_logits(files().b);
  const float* l = nullptr;
  size_t n = 0;
  ASSERT_EQ(og_session_logits(raw.get(), &l, &n), OG_OK);
  EXPECT_TRUE(std::vector<float>(l, l + n) == b);
  req.images[0].bytes = "nope";
  EXPECT_THROW(session.chat(req, g), offgraph::Error);
}

}  // namespace
