// Shared by the C API tests: the real model they run (stories260K; a missing
// file fails every test that needs it, loudly) and its greedy reference.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "offgraph/offgraph.h"

namespace og_test {

inline const std::string kModelPath = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
inline const std::string kPrompt = "Once upon a time";
// Greedy, 60 new tokens (../shared/testdata/models/stories260K/REFERENCE_OUTPUTS.md, case A).
inline const std::string kContinuation =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
    "ball. She wanted to play with it, but it was too high.\nLily";
inline const std::vector<int32_t> kPromptIds = {1, 403, 407, 261, 378};

// Opens the model once per test; fails (never skips) when the file is missing.
class ModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kModelPath)) << "the test model is missing: " << kModelPath;
    ASSERT_EQ(og_model_open(kModelPath.c_str(), nullptr, &model_), OG_OK) << og_last_error();
  }
  void TearDown() override { EXPECT_EQ(og_model_close(model_), OG_OK) << og_last_error(); }

  og_session* new_session(const char* dtype = "f16") {
    og_session_options o;
    og_session_options_init(&o);
    o.kv_dtype = dtype;
    og_session* s = nullptr;
    EXPECT_EQ(og_session_new(model_, &o, &s), OG_OK) << og_last_error();
    return s;
  }

  og_model* model_ = nullptr;
};

inline og_generate_options greedy(int64_t max_new_tokens) {
  og_generate_options o;
  og_generate_options_init(&o);
  o.max_new_tokens = max_new_tokens;
  return o;
}

inline std::string text_of(const og_generation& g) { return std::string(g.text.data, g.text.len); }

}  // namespace og_test
