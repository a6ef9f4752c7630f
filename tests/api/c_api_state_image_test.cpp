// og_session_save / og_session_load with images (docs/vision.md, "The seam"):
// a session file keeps each image's span, hash and rows, so that a loaded
// session continues bit for bit as the saved one (an image already in the
// cache and one still pending), forks and rewinds across its images as it
// would, and a file of another version, another tower, a model without one,
// or truncated / corrupt is a clear OG_ERR_INVALID_ARGUMENT that leaves the
// session unchanged. og-synth's tiny Gemma 3 with its mmproj; the test writes
// its images (tiny_png.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "offgraph/offgraph.h"
#include "tiny_png.h"

namespace {

namespace fs = std::filesystem;

struct Files {
  std::string dir, model, mmproj, other_mmproj;
  std::string a, b;  // PNG bytes
};

void synth(const std::string& args) {
  const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family gemma3 --vision --format gguf " + args +
                          " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

const Files& files() {
  static const Files f = [] {
    Files x;
    x.dir = (fs::temp_directory_path() / ("og-api-state-image-" + std::to_string(::getpid()))).string();
    fs::create_directories(x.dir);
    x.model = x.dir + "/m.gguf";
    x.mmproj = x.dir + "/p.gguf";
    x.other_mmproj = x.dir + "/p2.gguf";
    synth("--out '" + x.model + "' --mmproj-out '" + x.mmproj + "'");
    // The same shapes with other weights: a tower of another model.
    synth("--seed 2 --out '" + x.dir + "/m2.gguf' --mmproj-out '" + x.other_mmproj + "'");
    x.a = og::test::tiny_png(40, 30, [](int px, int py) { return static_cast<uint32_t>((px * 7) << 16 | (py * 5) << 8 | (px + py)); });
    x.b = og::test::tiny_png(40, 30, [](int, int) { return 0x0ac80au; });
    return x;
  }();
  return f;
}

class StateImageTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(files().dir, ec);
  }
  void SetUp() override { model_ = open(files().mmproj.c_str()); }
  void TearDown() override {
    for (og_session* s : sessions_) og_session_free(s);
    for (og_model* m : models_) og_model_close(m);
  }
  og_model* open(const char* mmproj) {
    og_model_options o;
    og_model_options_init(&o);
    o.mmproj = mmproj;
    og_model* m = nullptr;
    EXPECT_EQ(og_model_open(files().model.c_str(), &o, &m), OG_OK) << og_last_error();
    models_.push_back(m);
    return m;
  }
  og_session* session(og_model* m = nullptr) {
    og_session* s = nullptr;
    EXPECT_EQ(og_session_new(m ? m : model_, nullptr, &s), OG_OK) << og_last_error();
    sessions_.push_back(s);
    return s;
  }
  static void append(og_session* s, const std::string& png) {
    ASSERT_EQ(og_session_append_image(s, reinterpret_cast<const uint8_t*>(png.data()), png.size()), OG_OK)
        << og_last_error();
  }
  static std::vector<float> logits(og_session* s) {
    const float* l = nullptr;
    size_t n = 0;
    EXPECT_EQ(og_session_logits(s, &l, &n), OG_OK) << og_last_error();
    return l ? std::vector<float>(l, l + n) : std::vector<float>{};
  }
  // Prefills `ids` wanting logits and returns them.
  static std::vector<float> next(og_session* s, const std::vector<int32_t>& ids) {
    EXPECT_EQ(og_session_prefill(s, ids.data(), ids.size(), 1), OG_OK) << og_last_error();
    return logits(s);
  }
  static std::vector<int32_t> gen(og_session* s, const std::vector<int32_t>& prompt, int n) {
    og_generate_options o;
    og_generate_options_init(&o);
    o.max_new_tokens = n;
    o.sampler.temperature = 0;
    og_generation g{};
    EXPECT_EQ(og_session_generate(s, prompt.data(), prompt.size(), &o, &g), OG_OK) << og_last_error();
    std::vector<int32_t> t(g.tokens.ids, g.tokens.ids + g.tokens.n);
    og_generation_free(&g);
    return t;
  }
  static int64_t position(og_session* s) {
    int64_t p = -1;
    EXPECT_EQ(og_session_position(s, &p), OG_OK);
    return p;
  }
  static std::vector<int32_t> history(og_session* s) {
    og_tokens h{};
    EXPECT_EQ(og_session_history(s, &h), OG_OK);
    std::vector<int32_t> v(h.ids, h.ids + h.n);
    og_tokens_free(&h);
    return v;
  }
  // A session holding image a in its cache, text, a generated reply whose
  // last token is pending, then image b pending, saved to `path`.
  og_session* saved(const std::string& path) {
    og_session* s = session();
    append(s, files().a);
    gen(s, {7, 8}, 6);
    append(s, files().b);
    EXPECT_EQ(og_session_save(s, path.c_str()), OG_OK) << og_last_error();
    return s;
  }
  std::string path(const std::string& name) const { return files().dir + "/" + name; }

  og_model* model_ = nullptr;
  std::vector<og_model*> models_;
  std::vector<og_session*> sessions_;
};

TEST_F(StateImageTest, ALoadedSessionWithImagesContinuesBitForBit) {
  const std::string file = path("two-images.ogs");
  og_session* s = saved(file);
  og_session* t = session();
  gen(t, {1, 300, 301}, 3);  // other state, replaced by the load
  ASSERT_EQ(og_session_load(t, file.c_str()), OG_OK) << og_last_error();
  EXPECT_EQ(history(t), history(s));
  // The pending image b and the next text: the same logits, then the same reply.
  EXPECT_EQ(next(t, {9}), next(s, {9}));
  EXPECT_EQ(gen(t, {10, 11}, 8), gen(s, {10, 11}, 8));
  // A fork of the loaded session carries both images.
  og_session* f = nullptr;
  ASSERT_EQ(og_session_fork(t, &f), OG_OK) << og_last_error();
  sessions_.push_back(f);
  EXPECT_EQ(next(f, {12}), next(s, {12}));
  // Rewinds keep or drop an image whole, as in the saved session: into image
  // b is refused, to its start then the other image gives the same logits.
  const std::vector<int32_t> h = history(t);
  constexpr int32_t kSoftToken = 516;  // og-synth's <image_soft_token>, 4 per image
  int64_t b_begin = static_cast<int64_t>(h.size());  // the first position of the last run of them
  while (b_begin > 0 && h[b_begin - 1] != kSoftToken) --b_begin;
  while (b_begin > 0 && h[b_begin - 1] == kSoftToken) --b_begin;
  ASSERT_GT(b_begin, 0);
  ASSERT_EQ(h[b_begin + 3], kSoftToken);
  EXPECT_EQ(og_session_rewind(t, b_begin + 2), OG_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(og_last_error()).find("is inside an image"), std::string::npos) << og_last_error();
  ASSERT_EQ(og_session_rewind(t, b_begin), OG_OK) << og_last_error();
  ASSERT_EQ(og_session_rewind(s, b_begin), OG_OK) << og_last_error();
  append(t, files().a);
  append(s, files().a);
  EXPECT_EQ(next(t, {13}), next(s, {13}));
  // Saved again and loaded into a third session: still the same.
  const std::string again = path("again.ogs");
  ASSERT_EQ(og_session_save(t, again.c_str()), OG_OK) << og_last_error();
  og_session* u = session();
  ASSERT_EQ(og_session_load(u, again.c_str()), OG_OK) << og_last_error();
  EXPECT_EQ(logits(u), logits(s));
  EXPECT_EQ(gen(u, {14}, 5), gen(s, {14}, 5));
}

// The image's rows come from the file, not from its placeholder ids: a
// session that held image b where a was loads as b.
TEST_F(StateImageTest, TheImageIsTheSavedOneNotItsPlaceholders) {
  og_session* a = session();
  append(a, files().a);
  const std::string file = path("a.ogs");
  ASSERT_EQ(og_session_save(a, file.c_str()), OG_OK) << og_last_error();
  og_session* b = session();
  append(b, files().b);
  og_session* t = session();
  ASSERT_EQ(og_session_load(t, file.c_str()), OG_OK) << og_last_error();
  EXPECT_EQ(history(t), history(b));  // the same ids ...
  const std::vector<float> got = next(t, {7});
  EXPECT_EQ(got, next(a, {7}));  // ... and a's rows
  EXPECT_NE(got, next(b, {7}));
}

TEST_F(StateImageTest, BadFilesAreClearErrorsAndChangeNothing) {
  const std::string good = path("good.ogs");
  saved(good);
  std::string bytes;
  {
    std::ifstream f(good, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  auto write = [&](const std::string& name, const std::string& b) {
    std::ofstream(path(name), std::ios::binary) << b;
    return path(name);
  };
  auto refused = [&](og_session* t, const std::string& file, const std::string& part) {
    gen(t, {1, 300}, 3);
    const std::vector<int32_t> before = history(t);
    EXPECT_EQ(og_session_load(t, file.c_str()), OG_ERR_INVALID_ARGUMENT) << file;
    const std::string err = og_last_error();
    EXPECT_NE(err.find(part), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    EXPECT_EQ(history(t), before);
  };
  og_session* t = session();
  refused(t, write("short.ogs", bytes.substr(0, bytes.size() - 100)), "truncated");
  std::string flipped = bytes;
  flipped[flipped.size() - 200] ^= 0x08;  // inside image b's rows
  refused(t, write("flip.ogs", flipped), "corrupt (its checksum does not match)");
  std::string v1 = bytes;  // version 1 is still read, but these bytes are not one
  v1[8] = 1;
  refused(t, write("v1.ogs", v1), "corrupt (its checksum does not match)");
  std::string v9 = bytes;
  v9[8] = 9;
  refused(t, write("v9.ogs", v9), "has version 9; this library reads versions 1 and 2");
  // The same text model with another tower, and without one.
  refused(session(open(files().other_mmproj.c_str())), good, "was saved with another vision tower");
  refused(session(open(nullptr)), good, "holds 2 image(s) but this model has no vision tower");
  // A session without images saves and loads in a model without a tower.
  og_session* plain = session(open(nullptr));
  gen(plain, {1, 300}, 3);
  ASSERT_EQ(og_session_save(plain, path("plain.ogs").c_str()), OG_OK) << og_last_error();
  og_session* back = session(open(nullptr));
  ASSERT_EQ(og_session_load(back, path("plain.ogs").c_str()), OG_OK) << og_last_error();
  EXPECT_EQ(history(back), history(plain));
}

}  // namespace
