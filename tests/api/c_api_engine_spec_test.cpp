// The C API engine's speculation (issue 47, the library): a draft model given
// as og_engine_options.draft_model (the target as its own draft: the plain text
// with every draft token accepted; another vocabulary refused naming the
// field), and og_engine_spec_stats' counters adding up.
#include <cstddef>
#include <numeric>
#include <tuple>

#include "api/api_test_util.h"
#include "offgraph/offgraph.hpp"

namespace {

using namespace og_test;

const std::string kOtherVocab =
    std::string(OG_TESTDATA_DIR) + "/models/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf";

og_engine_options engine_options() {
  og_engine_options eo;
  og_engine_options_init(&eo);
  eo.kv_dtype = "f32";
  eo.max_sequences = 2;
  eo.max_session_tokens = 256;
  return eo;
}

std::vector<int32_t> ids_of(og_model* m, const std::string& text) {
  og_tokens t{};
  EXPECT_EQ(og_tokenize(m, text.data(), text.size(), 1, 0, &t), OG_OK) << og_last_error();
  std::vector<int32_t> ids(t.ids, t.ids + t.n);
  og_tokens_free(&t);
  return ids;
}

// Each prompt's greedy text through `eo`'s engine, the prompts running together.
std::vector<std::string> texts(og_model* m, const og_engine_options& eo, const std::vector<std::vector<int32_t>>& ps,
                               og_spec_stats* spec) {
  og_engine* e = nullptr;
  EXPECT_EQ(og_engine_new(m, &eo, &e), OG_OK) << og_last_error();
  std::vector<uint64_t> ids;
  for (const auto& p : ps) {
    uint64_t id = 0;
    const og_generate_options o = greedy(48);
    EXPECT_EQ(og_engine_submit(e, p.data(), p.size(), &o, &id), OG_OK) << og_last_error();
    ids.push_back(id);
  }
  std::vector<std::string> out;
  for (uint64_t id : ids) {
    std::string text;
    for (og_event ev{}; ev.kind != OG_EVENT_FINISHED;) {
      if (og_engine_next(e, id, -1, &ev) != OG_OK) break;
      if (ev.kind == OG_EVENT_TEXT) text.append(ev.text, ev.len);
    }
    out.push_back(text);
  }
  spec->struct_size = sizeof(og_spec_stats);
  EXPECT_EQ(og_engine_spec_stats(e, spec), OG_OK) << og_last_error();
  EXPECT_EQ(og_engine_free(e), OG_OK);
  return out;
}

void expect_adds_up(const og_spec_stats& s, int64_t draft_max) {
  EXPECT_EQ(s.struct_size, sizeof(og_spec_stats));
  EXPECT_LE(s.accepted_tokens, s.draft_tokens);
  EXPECT_LE(s.draft_tokens, s.drafts * draft_max);
  const int64_t per_pos = std::accumulate(s.accepted_per_pos, s.accepted_per_pos + OG_SPEC_POSITIONS, int64_t{0});
  EXPECT_EQ(per_pos + s.accepted_beyond, s.accepted_tokens);
  for (int i = 1; i < OG_SPEC_POSITIONS; ++i) EXPECT_LE(s.accepted_per_pos[i], s.accepted_per_pos[i - 1]) << i;
}

TEST_F(ModelTest, EngineDraftModelGivesThePlainTextWithEveryDraftAccepted) {
  const std::vector<std::vector<int32_t>> prompts = {kPromptIds, ids_of(model_, "The cat sat on the")};
  og_spec_stats plain_spec{};
  const og_engine_options plain_opts = engine_options();
  const std::vector<std::string> plain = texts(model_, plain_opts, prompts, &plain_spec);
  EXPECT_EQ(plain_spec.drafts, 0);
  EXPECT_EQ(plain_spec.accepted_tokens, 0);
  // The target as its own draft, through a second handle closed once the engine holds it.
  og_model* draft = nullptr;
  ASSERT_EQ(og_model_open(kModelPath.c_str(), nullptr, &draft), OG_OK) << og_last_error();
  og_engine_options eo = engine_options();
  eo.draft_model = draft;
  eo.spec_draft_p_min = 0;  // always draft spec_draft_max tokens
  eo.spec_draft_max = 3;
  og_engine* e = nullptr;
  ASSERT_EQ(og_engine_new(model_, &eo, &e), OG_OK) << og_last_error();
  ASSERT_EQ(og_model_close(draft), OG_OK);
  std::vector<uint64_t> ids;
  for (const auto& p : prompts) {
    uint64_t id = 0;
    const og_generate_options o = greedy(48);
    ASSERT_EQ(og_engine_submit(e, p.data(), p.size(), &o, &id), OG_OK) << og_last_error();
    ids.push_back(id);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string text;
    for (og_event ev{}; ev.kind != OG_EVENT_FINISHED;) {
      ASSERT_EQ(og_engine_next(e, ids[i], -1, &ev), OG_OK) << og_last_error();
      if (ev.kind == OG_EVENT_TEXT) text.append(ev.text, ev.len);
    }
    EXPECT_EQ(text, plain[i]) << i;
  }
  og_spec_stats s{};
  s.struct_size = sizeof(s);
  ASSERT_EQ(og_engine_spec_stats(e, &s), OG_OK) << og_last_error();
  EXPECT_GT(s.drafts, 0);
  EXPECT_GT(s.draft_tokens, 0);
  EXPECT_EQ(s.accepted_tokens, s.draft_tokens);  // 100 %: the draft is the target
  EXPECT_EQ(s.accepted_per_pos[3], 0);           // never past spec_draft_max
  expect_adds_up(s, 3);
  og_engine_stats st{};
  ASSERT_EQ(og_engine_get_stats(e, &st), OG_OK);
  EXPECT_LT(st.steps, 2 * 48);  // several tokens per step
  EXPECT_EQ(og_engine_free(e), OG_OK);
}

TEST_F(ModelTest, EngineDraftModelOfAnotherVocabularyOrWithPromptLookupIsRefused) {
  ASSERT_TRUE(std::filesystem::exists(kOtherVocab)) << "missing test data " << kOtherVocab;
  og_model* other = nullptr;
  ASSERT_EQ(og_model_open(kOtherVocab.c_str(), nullptr, &other), OG_OK) << og_last_error();
  og_engine_options eo = engine_options();
  eo.draft_model = other;
  og_engine* e = nullptr;
  EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_ARGUMENT);
  const std::string msg = og_last_error();
  EXPECT_EQ(msg.rfind("draft_model: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("same tokenizer"), std::string::npos) << msg;
  EXPECT_EQ(e, nullptr);
  // Two proposers, a p_min outside [0, 1], a draft_max outside [1, 256]: each names its field.
  eo.draft_model = model_;
  for (auto [ngram, p_min, draft_max, field] :
       {std::tuple{3, 0.75, 4, "spec_ngram_size"}, std::tuple{0, 1.5, 4, "spec_draft_p_min"},
        std::tuple{0, 0.75, 0, "spec_draft_max"}}) {
    eo.spec_ngram_size = ngram;
    eo.spec_draft_p_min = p_min;
    eo.spec_draft_max = draft_max;
    EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_ARGUMENT) << field;
    EXPECT_EQ(std::string(og_last_error()).rfind(field, 0), 0u) << og_last_error();
    EXPECT_EQ(e, nullptr);
  }
  // A program built against ABI 2's header (the struct ending before the spec fields) keeps their defaults.
  eo = engine_options();
  eo.spec_ngram_size = 99;  // beyond the old struct_size: never read
  eo.struct_size = offsetof(og_engine_options, spec_ngram_size);
  ASSERT_EQ(og_engine_new(model_, &eo, &e), OG_OK) << og_last_error();
  EXPECT_EQ(og_engine_free(e), OG_OK);
  // A closed draft handle is a bad handle, named.
  ASSERT_EQ(og_model_close(other), OG_OK);
  eo = engine_options();
  eo.draft_model = other;
  EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(std::string(og_last_error()).rfind("draft_model: ", 0), 0u) << og_last_error();
}

// Prompt lookup's counters through og_engine_spec_stats; an older, shorter
// struct gets its own fields only; a struct_size of 0 is refused.
TEST_F(ModelTest, EngineSpecStatsAddUp) {
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little";
  og_engine_options eo = engine_options();
  eo.spec_ngram_size = 3;
  og_spec_stats s{};
  {  // through the C++ wrapper
    offgraph::Model m(kModelPath);
    offgraph::Engine engine(m, &eo);
    const uint64_t a = engine.submit(ids_of(model_, story), greedy(48));
    const uint64_t b = engine.submit(kPromptIds, greedy(48));
    engine.collect(a);
    engine.collect(b);
    s = engine.spec_stats();
  }
  EXPECT_GT(s.accepted_tokens, 0);
  expect_adds_up(s, eo.spec_draft_max);

  og_engine* e = nullptr;
  ASSERT_EQ(og_engine_new(model_, &eo, &e), OG_OK) << og_last_error();
  og_spec_stats old{};
  old.struct_size = offsetof(og_spec_stats, pauses);  // a header that ended after accepted_tokens
  old.pauses = -7;
  EXPECT_EQ(og_engine_spec_stats(e, &old), OG_OK) << og_last_error();
  EXPECT_EQ(old.struct_size, offsetof(og_spec_stats, pauses));
  EXPECT_EQ(old.pauses, -7);  // beyond its size: untouched
  og_spec_stats zero{};
  EXPECT_EQ(og_engine_spec_stats(e, &zero), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("struct_size"), std::string::npos) << og_last_error();
  EXPECT_EQ(og_engine_spec_stats(e, nullptr), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_engine_free(e), OG_OK);
  EXPECT_EQ(og_engine_spec_stats(e, &s), OG_ERR_INVALID_HANDLE);
}

}  // namespace
