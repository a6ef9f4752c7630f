// Images in a session's history (docs/vision.md) on a real synthetic Gemma 3:
// an appended image is forwarded whole with its embeddings and span and gives
// the logits of the same rows forwarded by hand; rewinds keep or drop it whole
// (a rewind inside it is refused); a fork and a ring's recomputation stay exact.
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/families/family.h"
#include "model/synth_fixture.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

using namespace og::test;

constexpr int32_t kPlaceholder = 0;
constexpr int64_t kImageLen = 6;

struct Loaded {
  Loaded() : model(Model::load(synth_gguf(synth::Family::kGemma3))), tok(Tokenizer::from_path(model->source_path())),
             engine(*model) {
    const int64_t d = model->config().d_model;
    for (int64_t i = 0; i < kImageLen * d; ++i) image.push_back(0.05f * float((i * 7919) % 41) - 1.0f);
  }
  std::unique_ptr<KvCache> cache(KvKind kind = KvKind::kReference, int64_t max_write = 512) const {
    KvPolicy p;
    p.max_capacity = 64;
    p.initial_capacity = 16;
    p.max_write = max_write;
    p.max_sequences = 2;
    return make_kv_cache(kind, model->kv_geometry(), p);
  }
  int64_t d() const { return model->config().d_model; }
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  ModelEngine engine;
  std::vector<float> image;  // [kImageLen, d_model]
  const Sha256Digest hash = Sha256::of(std::string_view("an image"));
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

// Session: text, the image (bidirectional as the family says), text; logits of the last row.
std::vector<float> session_logits(Session& s, const std::vector<int32_t>& before, const std::vector<int32_t>& after) {
  Loaded& l = loaded();
  s.prefill(before);
  s.append_image(l.image, l.d(), l.hash, kPlaceholder, family_by_name("gemma3")->image_spans_bidirectional);
  s.prefill(after, true);
  return {s.logits().begin(), s.logits().end()};
}

TEST(SessionImage, AnImageIsForwardedWholeWithItsEmbeddingsAndSpan) {
  Loaded& l = loaded();
  const std::vector<int32_t> before = test_tokens(3, l.model->n_vocab(), 1), after = test_tokens(4, l.model->n_vocab(), 2);
  Session s(l.engine, l.cache(), *l.tok);
  const std::vector<float> got = session_logits(s, before, after);
  EXPECT_EQ(s.position(), 3 + kImageLen + 4);
  ASSERT_EQ(s.images().size(), 1u);
  EXPECT_EQ(s.image_spans()[0], (ImageSpan{3, kImageLen, l.hash}));
  // The same rows by hand: the text, then the image (one span) and the text in one step.
  auto c = l.cache();
  std::vector<float> logits;
  Batch b;
  for (int64_t i = 0; i < 3; ++i) b.rows.push_back({before[i], 0, i, false});
  ASSERT_TRUE(l.model->forward(b, *c, logits).ok());
  b.rows.clear();
  for (int64_t i = 0; i < kImageLen; ++i) {
    BatchRow r{kPlaceholder, 0, 3 + i, false};
    r.embedding = std::span(l.image).subspan(size_t(i * l.d()), size_t(l.d()));
    b.rows.push_back(r);
  }
  b.mark_bidirectional(0, 3, 3 + kImageLen);
  for (int64_t i = 0; i < 4; ++i) b.rows.push_back({after[i], 0, 3 + kImageLen + i, i == 3});
  ASSERT_TRUE(l.model->forward(b, *c, logits).ok());
  EXPECT_TRUE(got == logits);
  // A small prefill chunk never splits the image: chunks of 4 give the same logits as the reference mask.
  Session chunked(l.engine, l.cache(KvKind::kReference, kImageLen), *l.tok);
  EXPECT_LE(max_rel_err(session_logits(chunked, before, after), got), 1e-5);
  // Text and image pending together: the first chunk stops where the image starts.
  Session pending(l.engine, l.cache(KvKind::kReference, kImageLen), *l.tok);
  pending.append_pending(before);
  pending.append_image(l.image, l.d(), l.hash, kPlaceholder, true);
  pending.prefill(after, true);
  EXPECT_LE(max_rel_err(std::vector<float>(pending.logits().begin(), pending.logits().end()), got), 1e-5);
}

TEST(SessionImage, RewindsKeepOrDropAnImageWholeAndRefuseToSplitIt) {
  Loaded& l = loaded();
  const std::vector<int32_t> before = test_tokens(3, l.model->n_vocab(), 3), after = test_tokens(4, l.model->n_vocab(), 4);
  Session s(l.engine, l.cache(), *l.tok);
  const std::vector<float> want = session_logits(s, before, after);
  try {
    s.rewind_to(5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 5 is inside an image (positions [3, 9)); rewind to 3 or 9"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(s.position(), 13);
  s.rewind_to(9);  // after the image: kept
  EXPECT_EQ(s.images().size(), 1u);
  s.prefill(after, true);
  EXPECT_TRUE(std::vector<float>(s.logits().begin(), s.logits().end()) == want);
  s.rewind_to(3);  // to its start: dropped
  EXPECT_TRUE(s.images().empty());
  EXPECT_EQ(s.cached(), 3);
  s.append_image(l.image, l.d(), l.hash, kPlaceholder, true);
  s.prefill(after, true);
  EXPECT_TRUE(std::vector<float>(s.logits().begin(), s.logits().end()) == want);
  s.reset();
  EXPECT_TRUE(s.images().empty());
}

TEST(SessionImage, AForkCarriesTheImageAndARingRecomputesItExactly) {
  Loaded& l = loaded();
  const std::vector<int32_t> before = test_tokens(3, l.model->n_vocab(), 5), after = test_tokens(4, l.model->n_vocab(), 6);
  const std::vector<int32_t> more = test_tokens(5, l.model->n_vocab(), 7);
  auto shared = l.cache(KvKind::kBatchedCell);
  if (shared->length(0) < 0) {
    ASSERT_TRUE(shared->add_sequence(0).ok());
  }
  Session a(l.engine, *shared, 0, *l.tok);
  session_logits(a, before, after);
  ASSERT_TRUE(shared->fork(0, 1, a.position()).ok());
  Session b(l.engine, *shared, 1, *l.tok, a.history(), a.images());
  a.prefill(more, true);
  b.prefill(more, true);
  EXPECT_TRUE(std::vector<float>(a.logits().begin(), a.logits().end()) ==
              std::vector<float>(b.logits().begin(), b.logits().end()));
  EXPECT_EQ(b.image_spans(), a.image_spans());
  // A ring (gemma3's local layers, window 8) that lost the image: the rewind refills it from the kept embeddings.
  Session ring(l.engine, l.cache(KvKind::kSequence, kImageLen), *l.tok);
  session_logits(ring, before, after);
  ring.prefill(test_tokens(12, l.model->n_vocab(), 8));  // the ring (13 slots) now lacks positions 0..11
  const RewindResult r = ring.rewind_to(3 + kImageLen + 4);
  EXPECT_TRUE(r.recomputed);
  ring.prefill(more, true);
  EXPECT_LE(max_rel_err(std::vector<float>(ring.logits().begin(), ring.logits().end()),
                        std::vector<float>(a.logits().begin(), a.logits().end())),
            1e-5);
}

TEST(SessionImage, BadImagesAreClearErrors) {
  Loaded& l = loaded();
  Session s(l.engine, l.cache(KvKind::kReference, 4), *l.tok);
  auto error_of = [&](std::span<const float> e, int64_t width) -> std::string {
    try {
      s.append_image(e, width, l.hash, kPlaceholder, true);
    } catch (const Error& err) {
      return err.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error_of(std::span(l.image).first(size_t(l.d() + 1)), l.d()).find("not whole rows of width"),
            std::string::npos);
  EXPECT_NE(error_of(l.image, l.d()).find("longer than one step may write (max_write 4)"), std::string::npos);
  EXPECT_EQ(s.position(), 0);
  // A width other than the model's: the forward refuses it, the session is unchanged.
  s.append_image(std::span(l.image).first(size_t(2 * (l.d() - 1))), l.d() - 1, l.hash, kPlaceholder, true);
  EXPECT_THROW(s.prefill({}, false), Error);
  // A fork whose images do not fit its history.
  auto c = l.cache();
  std::vector<SessionImage> bad(1);
  bad[0].span = ImageSpan{0, 5, l.hash};
  EXPECT_THROW(Session(l.engine, *c, 0, *l.tok, {}, bad), Error);
}

}  // namespace
}  // namespace og
