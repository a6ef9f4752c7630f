// An image into a session through the vision tower (runtime/image_input.h)
// on a synthetic Gemma 3 with a tiny random tower: 8-bit pixels ->
// preprocessing (the Gemma 3 preset at the tower's size) -> tower -> the
// session's history; the same image gives the same logits, another image
// other logits; a tower of another width is refused before anything changes.
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/families/family.h"
#include "model/synth_fixture.h"
#include "model/vision_tower_fixture.h"
#include "runtime/image_input.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"
#include "vision/preprocess.h"

namespace og {
namespace {

using namespace og::test;

constexpr int32_t kPlaceholder = 0;

struct Loaded {
  Loaded() : model(Model::load(synth_gguf(synth::Family::kGemma3))), tok(Tokenizer::from_path(model->source_path())),
             engine(*model) {
    const VisionTowerConfig c = tiny_config(model->config().d_model);
    add_tower(src, c, 21);
    tower = std::make_unique<VisionTower>(c, bind_gemma3_vision(c, src));
  }
  std::unique_ptr<KvCache> cache() const {
    KvPolicy p;
    p.max_capacity = 64;
    p.initial_capacity = 16;
    p.max_write = 512;
    p.max_sequences = 1;
    return make_kv_cache(KvKind::kReference, model->kv_geometry(), p);
  }
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  ModelEngine engine;
  MemorySource src;
  std::unique_ptr<VisionTower> tower;
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

// A w x h RGB picture, a gradient shifted by `seed`, preprocessed as Gemma 3's
// processor does but to the tiny tower's size (bilinear resize, mean = std = 0.5).
std::vector<float> pixels_of(int w, int h, int seed) {
  vision::Image im;
  im.width = w;
  im.height = h;
  im.channels = 3;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < 3; ++ch) im.pixels.push_back(static_cast<uint8_t>((x * 5 + y * 3 + ch * 40 + seed) % 256));
  vision::PreprocessConfig pc = vision::gemma3_siglip_config();
  pc.width = pc.height = static_cast<int>(loaded().tower->config().image_size);
  return vision::preprocess_image(im, pc);
}

// text, the image, text: the last row's logits.
std::vector<float> logits_with(const TowerImage& image) {
  Loaded& l = loaded();
  Session s(l.engine, l.cache(), *l.tok);
  s.prefill(test_tokens(3, l.model->n_vocab(), 1));
  append_tower_image(s, image, l.model->config().d_model, kPlaceholder,
                     family_by_name("gemma3")->image_spans_bidirectional);
  EXPECT_EQ(s.images().size(), 1u);
  EXPECT_EQ(s.image_spans()[0].begin, 3);
  EXPECT_EQ(s.image_spans()[0].length, 9);
  s.prefill(test_tokens(4, l.model->n_vocab(), 2), true);
  EXPECT_EQ(s.position(), 3 + 9 + 4);
  return {s.logits().begin(), s.logits().end()};
}

TEST(ImageInput, TheSameImageGivesTheSameLogitsAndAnotherImageOthers) {
  Loaded& l = loaded();
  const TowerImage a = encode_image(*l.tower, pixels_of(100, 70, 0));
  const TowerImage a2 = encode_image(*l.tower, pixels_of(100, 70, 0));
  const TowerImage b = encode_image(*l.tower, pixels_of(100, 70, 90));
  ASSERT_EQ(a.n_rows(), 9);
  EXPECT_EQ(a.width, l.model->config().d_model);
  EXPECT_EQ(a.hash, a2.hash);
  EXPECT_NE(a.hash, b.hash);
  const std::vector<float> la = logits_with(a), la2 = logits_with(a2), lb = logits_with(b);
  ASSERT_EQ(la.size(), static_cast<size_t>(l.model->n_vocab()));
  EXPECT_TRUE(la == la2);
  EXPECT_FALSE(la == lb);
}

TEST(ImageInput, ATowerOfAnotherWidthOrWrongPixelsAreRefused) {
  Loaded& l = loaded();
  const VisionTowerConfig c = tiny_config(l.model->config().d_model + 8);
  MemorySource src;
  add_tower(src, c, 3);
  const VisionTower other(c, bind_gemma3_vision(c, src));
  const TowerImage im = encode_image(other, pixels_of(84, 84, 0));
  Session s(l.engine, l.cache(), *l.tok);
  try {
    append_tower_image(s, im, l.model->config().d_model, kPlaceholder, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("text model's hidden size is"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.position(), 0);
  EXPECT_TRUE(s.images().empty());
  const std::vector<float> small(3 * 28 * 28, 0.0f);
  EXPECT_THROW(encode_image(*l.tower, small), Error);
}

}  // namespace
}  // namespace og
