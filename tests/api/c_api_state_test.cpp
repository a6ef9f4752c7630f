// og_session_save / og_session_load: a loaded session continues exactly as
// the saved one would (greedy and seeded, after a generate that left its last
// token pending and after a prefill), keeps its undo marks and logits, and a
// missing, foreign, truncated, corrupt or other-model file is a clear error
// that leaves the session unchanged.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "api/api_test_util.h"

namespace og_test {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class StateTest : public ModelTest {
 protected:
  void SetUp() override {
    ModelTest::SetUp();
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    ModelTest::TearDown();
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<int32_t> gen(og_session* s, const std::vector<int32_t>& prompt, int n, double temp = 0,
                           int64_t seed = 0) {
    og_generate_options o = greedy(n);
    o.sampler.temperature = temp;
    o.sampler.seed = seed;
    og_generation g{};
    EXPECT_EQ(og_session_generate(s, prompt.data(), prompt.size(), &o, &g), OG_OK) << og_last_error();
    std::vector<int32_t> t(g.tokens.ids, g.tokens.ids + g.tokens.n);
    og_generation_free(&g);
    return t;
  }
  int64_t position(og_session* s) {
    int64_t p = -1;
    EXPECT_EQ(og_session_position(s, &p), OG_OK);
    return p;
  }

  fs::path dir_ = fs::temp_directory_path() / ("og-api-state-" + std::to_string(::getpid()));
};

TEST_F(StateTest, ALoadedSessionContinuesExactlyAsTheSavedOne) {
  for (const char* dtype : {"f16", "f32"}) {
    og_session* a = new_session(dtype);
    gen(a, kPromptIds, 20);  // its last token stays pending
    const std::string path = file(std::string("a-") + dtype + ".ogs");
    ASSERT_EQ(og_session_save(a, path.c_str()), OG_OK) << og_last_error();
    const std::vector<int32_t> greedy_a = gen(a, {}, 25);
    const std::vector<int32_t> more = {403, 407};
    const std::vector<int32_t> seeded_a = gen(a, more, 25, 0.8, 42);
    og_session* b = new_session(dtype);
    gen(b, {1, 300, 301}, 5);  // some other state, replaced by the load
    ASSERT_EQ(og_session_load(b, path.c_str()), OG_OK) << og_last_error();
    EXPECT_EQ(position(b), 25);
    EXPECT_EQ(gen(b, {}, 25), greedy_a) << dtype;
    EXPECT_EQ(gen(b, more, 25, 0.8, 42), seeded_a) << dtype;
    // The undo marks came along: three turns back is the saved state's first turn.
    ASSERT_EQ(og_session_undo(b), OG_OK);
    ASSERT_EQ(og_session_undo(b), OG_OK);
    EXPECT_EQ(position(b), 25);
    ASSERT_EQ(og_session_undo(b), OG_OK);
    EXPECT_EQ(position(b), 0);
    EXPECT_EQ(og_session_undo(b), OG_ERR_STATE);
    og_session_free(a);
    og_session_free(b);
  }
}

TEST_F(StateTest, APrefilledSessionKeepsItsLogits) {
  og_session* a = new_session();
  ASSERT_EQ(og_session_prefill(a, kPromptIds.data(), kPromptIds.size(), 1), OG_OK);
  const float* l = nullptr;
  size_t n = 0;
  ASSERT_EQ(og_session_logits(a, &l, &n), OG_OK);
  const std::vector<float> want(l, l + n);
  const std::string path = file("p.ogs");
  ASSERT_EQ(og_session_save(a, path.c_str()), OG_OK) << og_last_error();
  og_session* b = new_session();
  ASSERT_EQ(og_session_load(b, path.c_str()), OG_OK) << og_last_error();
  ASSERT_EQ(og_session_logits(b, &l, &n), OG_OK) << og_last_error();
  EXPECT_EQ(std::vector<float>(l, l + n), want);
  og_generate_options o = greedy(60);
  og_generation g{};
  ASSERT_EQ(og_session_generate(b, nullptr, 0, &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(text_of(g), kContinuation);
  og_generation_free(&g);
  // A forked loaded session and a loaded one reset work as any other.
  og_session* f = nullptr;
  ASSERT_EQ(og_session_fork(b, &f), OG_OK);
  ASSERT_EQ(og_session_reset(b), OG_OK);
  EXPECT_EQ(position(f), position(a) + 60);
  og_session_free(f);
  og_session_free(a);
  og_session_free(b);
}

// A version 1 file (written before images: no n_images field) still loads,
// as a session without images, and continues as the saved one.
TEST_F(StateTest, AVersionOneFileStillLoads) {
  og_session* a = new_session();
  gen(a, kPromptIds, 20);
  const std::string path = file("v2.ogs");
  ASSERT_EQ(og_session_save(a, path.c_str()), OG_OK) << og_last_error();
  const std::string v2 = read_bytes(path);
  // magic 8, version 4, fingerprint 32, n_vocab 4, kv_dtype (u64 length + bytes),
  // n_history u64 + i32 each, then version 2's n_images (0 here): version 1 ends its
  // history there and goes on with n_cached.
  auto u64_at = [&](size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, v2.data() + at, sizeof v);
    return v;
  };
  const size_t dtype_at = 8 + 4 + 32 + 4;
  const size_t history_at = dtype_at + 8 + u64_at(dtype_at);
  const size_t images_at = history_at + 8 + 4 * u64_at(history_at);
  ASSERT_EQ(u64_at(images_at), 0u);
  std::string v1 = v2.substr(0, images_at) + v2.substr(images_at + 8, v2.size() - 8 - images_at - 8);
  v1[8] = 1;
  uint64_t h = 1469598103934665603ull;  // the file's checksum: FNV-1a 64 over everything before it
  for (unsigned char c : v1) h = (h ^ c) * 1099511628211ull;
  v1.append(reinterpret_cast<const char*>(&h), sizeof h);
  const std::string old_path = file("v1.ogs");
  std::ofstream(old_path, std::ios::binary) << v1;
  const std::vector<int32_t> want = gen(a, {}, 25);
  og_session* b = new_session();
  ASSERT_EQ(og_session_load(b, old_path.c_str()), OG_OK) << og_last_error();
  EXPECT_EQ(position(b), position(a) - 25);
  EXPECT_EQ(gen(b, {}, 25), want);
  og_session_free(a);
  og_session_free(b);
}

TEST_F(StateTest, BadFilesAreClearErrorsAndChangeNothing) {
  og_session* a = new_session();
  gen(a, kPromptIds, 10);
  const std::string good = file("good.ogs");
  ASSERT_EQ(og_session_save(a, good.c_str()), OG_OK) << og_last_error();
  std::string bytes = read_bytes(good);
  auto write = [&](const std::string& name, const std::string& b) {
    std::ofstream(file(name), std::ios::binary) << b;
    return file(name);
  };
  og_session* b = new_session();
  gen(b, {1, 300}, 3);
  const int64_t before = position(b);
  auto expect_refused = [&](const std::string& path, og_status st, const std::string& part) {
    EXPECT_EQ(og_session_load(b, path.c_str()), st) << path;
    EXPECT_NE(std::string(og_last_error()).find(part), std::string::npos) << og_last_error();
    EXPECT_EQ(position(b), before);
  };
  expect_refused(file("missing.ogs"), OG_ERR_INVALID_ARGUMENT, "no such file");
  expect_refused(write("text.ogs", "hello, not a session"), OG_ERR_INVALID_ARGUMENT, "is not an offgraph session file");
  expect_refused(write("short.ogs", bytes.substr(0, bytes.size() / 2)), OG_ERR_INVALID_ARGUMENT, "truncated");
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  expect_refused(write("flip.ogs", flipped), OG_ERR_INVALID_ARGUMENT, "corrupt (its checksum does not match)");
  std::string v3 = bytes;  // a later version
  v3[8] = 3;
  expect_refused(write("v3.ogs", v3), OG_ERR_INVALID_ARGUMENT, "has version 3; this library reads versions 1 and 2");
  // Another model's session file.
  og_model* other = nullptr;
  const std::string other_path = std::string(OG_TESTDATA_DIR) + "/models/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf";
  ASSERT_EQ(og_model_open(other_path.c_str(), nullptr, &other), OG_OK) << og_last_error();
  og_session* o = nullptr;
  ASSERT_EQ(og_session_new(other, nullptr, &o), OG_OK);
  EXPECT_EQ(og_session_load(o, good.c_str()), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("was saved from another model"), std::string::npos) << og_last_error();
  og_session_free(o);
  og_model_close(other);
  // Another kv_dtype.
  og_session* f32 = new_session("f32");
  EXPECT_EQ(og_session_load(f32, good.c_str()), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("kv_dtype f16, this session stores f32"), std::string::npos)
      << og_last_error();
  og_session_free(f32);
  // Bad arguments and a running stream.
  EXPECT_EQ(og_session_save(a, nullptr), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_session_load(a, ""), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_session_save(a, file("no/such/dir/x.ogs").c_str()), OG_ERR_INVALID_ARGUMENT);
  og_generate_options go = greedy(4);
  ASSERT_EQ(og_session_stream_start(a, nullptr, 0, &go), OG_OK);
  EXPECT_EQ(og_session_save(a, good.c_str()), OG_ERR_STATE);
  ASSERT_EQ(og_session_stream_finish(a, nullptr), OG_OK);
  EXPECT_EQ(og_session_save(nullptr, good.c_str()), OG_ERR_INVALID_HANDLE);
  og_session_free(a);
  og_session_free(b);
}

}  // namespace
}  // namespace og_test
