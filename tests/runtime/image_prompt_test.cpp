// A prompt with images (runtime/image_input.h "A prompt with images"): the
// template's image markers expanded into runs of placeholders before
// tokenization, the runs found in the ids, and the prompt appended to a
// session (tokens pending, each image whole), on a synthetic Gemma 3 with
// the gemma4 synthetic tokenizer (whose control tokens stand in for Gemma 3's
// image tokens) and a tiny random tower.
#include <gtest/gtest.h>

#include "../api/tiny_png.h"
#include "base/error.h"
#include "chat/chat_request.h"
#include "chat/jinja_chat.h"
#include "model/families/family.h"
#include "model/synth_fixture.h"
#include "model/vision_tower_fixture.h"
#include "runtime/chat_images.h"
#include "runtime/image_input.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"
#include "vision/preprocess.h"

namespace og {
namespace {

using namespace og::test;

// Gemma 3's template's way with content parts, <|tool> standing for <start_of_image>.
const char* kTemplate =
    "{%- for m in messages -%}<|turn>{{ m.role }}\n{% if m.content is string %}{{ m.content | trim }}{% else %}"
    "{% for item in m.content %}{% if item.type == 'image' %}{{ '<|tool>' }}{% elif item.type == 'text' %}"
    "{{ item.text | trim }}{% endif %}{% endfor %}{% endif %}<turn|>\n{% endfor %}<|turn>model\n";

synth::SynthSpec spec() {
  synth::SynthSpec s = synth::tiny_spec(synth::Family::kGemma3);
  s.tokenizer = "gemma4";
  s.vocab = 768;
  s.chat_template = kTemplate;
  return s;
}

struct Loaded {
  Loaded()
      : model(Model::load(synth_path(spec(), false, "gemma3-image-prompt"))),
        tok(Tokenizer::from_path(model->source_path())),
        engine(*model),
        tmpl(kTemplate, jinja_options_of(*tok), "test") {
    const VisionTowerConfig c = tiny_config(model->config().d_model);
    add_tower(src, c, 5);
    tower = std::make_unique<VisionTower>(c, bind_gemma3_vision(c, src));
    markup.marker = "<|tool>";
    markup.open = "\n\n<|tool>";
    markup.placeholder_text = "<mask>";
    markup.close = "<tool|>\n\n";
    markup.placeholder = *tok->find_piece("<mask>");
    setup.format = &tmpl;
    setup.reply_format = tmpl.reply_format();
  }
  std::unique_ptr<KvCache> cache() const {
    KvPolicy p;
    p.max_capacity = 128;
    p.initial_capacity = 32;
    p.max_write = 512;
    p.max_sequences = 1;
    return make_kv_cache(KvKind::kReference, model->kv_geometry(), p);
  }
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  ModelEngine engine;
  JinjaChatTemplate tmpl;
  ChatSetup setup;
  MemorySource src;
  std::unique_ptr<VisionTower> tower;
  ImageMarkup markup;
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

TowerImage picture(int seed) {
  vision::Image im;
  im.width = 40;
  im.height = 30;
  im.channels = 3;
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x)
      for (int ch = 0; ch < 3; ++ch) im.pixels.push_back(static_cast<uint8_t>((x * 7 + y * 5 + ch * 60 + seed) % 256));
  vision::PreprocessConfig pc = vision::gemma3_siglip_config();
  pc.width = pc.height = static_cast<int>(loaded().tower->config().image_size);
  return encode_image(*loaded().tower, vision::preprocess_image(im, pc));
}

ChatRequest request(size_t n_images, const std::string& text) {
  ChatRequest r;
  ChatRequestMessage m;
  m.role = "user";
  for (size_t i = 0; i < n_images; ++i) m.parts.push_back(ChatContentPart::of_image("bytes" + std::to_string(i)));
  m.parts.push_back(ChatContentPart::of_text(text));
  r.messages.push_back(std::move(m));
  return r;
}

ImagePrompt prompt_of(const ChatRequest& r, const std::vector<TowerImage>& images) {
  Loaded& l = loaded();
  std::vector<int64_t> rows;
  for (const TowerImage& im : images) rows.push_back(im.n_rows());
  const ImageRuns runs = encode_with_images(*l.tok, plan_chat(r, l.setup).segments, l.markup, rows);
  ImagePrompt p;
  p.tokens = runs.tokens;
  p.placeholder = l.markup.placeholder;
  p.bidirectional = family_by_name("gemma3")->image_spans_bidirectional;
  for (size_t i = 0; i < images.size(); ++i) p.images.push_back({runs.starts[i], images[i]});
  return p;
}

std::vector<float> logits_of(const ImagePrompt& p) {
  Loaded& l = loaded();
  Session s(l.engine, l.cache(), *l.tok);
  append_image_prompt(s, p, 0, l.model->config().d_model);
  s.prefill({}, true);
  EXPECT_EQ(s.images().size(), p.images.size());
  return {s.logits().begin(), s.logits().end()};
}

TEST(ImagePrompt, EachMarkerBecomesARunOfPlaceholders) {
  Loaded& l = loaded();
  // The user's own "<|tool>" is text, never a marker.
  const ImageRuns r = encode_with_images(*l.tok, plan_chat(request(2, "Compare <|tool> these."), l.setup).segments,
                                         l.markup, std::vector<int64_t>{9, 9});
  ASSERT_EQ(r.starts.size(), 2u);
  const int32_t open = *l.tok->find_piece("<|tool>"), close = *l.tok->find_piece("<tool|>");
  for (int64_t s : r.starts) {
    EXPECT_EQ(r.tokens[s - 1], open);
    for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(r.tokens[s + i], l.markup.placeholder);
    EXPECT_EQ(r.tokens[s + 9], close);
  }
  EXPECT_EQ(std::count(r.tokens.begin(), r.tokens.end(), open), 2);
  // The run's text is the marker's expansion, in the template's text.
  const std::string text = l.tok->decode(r.tokens, false);
  EXPECT_NE(text.find("user\n\n\n<|tool><mask>"), std::string::npos) << text;
  EXPECT_NE(text.find("<tool|>\n\nCompare <|tool> these."), std::string::npos) << text;
}

TEST(ImagePrompt, AMarkerCountOtherThanTheImagesIsAClearError) {
  Loaded& l = loaded();
  const ChatSegments segs = plan_chat(request(1, "hi"), l.setup).segments;
  try {
    encode_with_images(*l.tok, segs, l.markup, std::vector<int64_t>{9, 9});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wrote 1 image marker ('<|tool>') for 2 images"), std::string::npos)
        << e.what();
  }
  ImageMarkup none = l.markup;
  none.marker = "<|think|>";  // a template that writes no marker for an image part
  EXPECT_THROW(encode_with_images(*l.tok, segs, none, std::vector<int64_t>{9}), Error);
  // Two images of other sizes side by side (a variable-size tower) split by their rows.
  const ImageRuns r = encode_with_images(*l.tok, plan_chat(request(2, "x"), l.setup).segments, l.markup,
                                         std::vector<int64_t>{3, 5});
  ASSERT_EQ(r.starts.size(), 2u);
  EXPECT_EQ(r.tokens[r.starts[0] + 3], *l.tok->find_piece("<tool|>"));
}

TEST(ImagePrompt, TheSameImageGivesTheSameLogitsAndAnotherOthers) {
  const ChatRequest r = request(1, "What is it?");
  const std::vector<float> a = logits_of(prompt_of(r, {picture(0)}));
  const std::vector<float> a2 = logits_of(prompt_of(r, {picture(0)}));
  const std::vector<float> b = logits_of(prompt_of(r, {picture(99)}));
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == a2);
  EXPECT_FALSE(a == b);
}

TEST(ImagePrompt, UndoAcrossAnImageThenTheSamePromptEqualsFresh) {
  Loaded& l = loaded();
  const ImagePrompt p = prompt_of(request(2, "Two?"), {picture(1), picture(2)});
  const std::vector<float> fresh = logits_of(p);
  Session s(l.engine, l.cache(), *l.tok);
  append_image_prompt(s, prompt_of(request(2, "Other words"), {picture(3), picture(2)}), 0, l.model->config().d_model);
  s.prefill({}, true);
  // Back to before the first image, then the prompt's rest from there.
  const int64_t at = p.images[0].position;
  s.rewind_to(at);
  EXPECT_TRUE(s.images().empty());
  append_image_prompt(s, p, at, l.model->config().d_model);
  s.prefill({}, true);
  EXPECT_EQ(s.image_spans(), p.spans());
  EXPECT_TRUE(std::vector<float>(s.logits().begin(), s.logits().end()) == fresh);
}

TEST(ImagePrompt, BadPromptsAreRefusedWithNothingAppended) {
  Loaded& l = loaded();
  const int64_t d = l.model->config().d_model;
  ImagePrompt p = prompt_of(request(1, "x"), {picture(0)});
  Session s(l.engine, l.cache(), *l.tok);
  EXPECT_THROW(append_image_prompt(s, p, p.images[0].position + 1, d), Error);  // inside the image
  ImagePrompt moved = p;
  moved.images[0].position -= 1;  // not over its placeholders
  EXPECT_THROW(append_image_prompt(s, moved, 0, d), Error);
  EXPECT_THROW(append_image_prompt(s, p, 0, d + 1), Error);  // another width
  EXPECT_EQ(s.position(), 0);
  EXPECT_TRUE(s.images().empty());
}

// Gemma 3's template writes the begin token, which gains "\n\n" on both
// sides; other kinds' templates write the placeholder itself.
TEST(ImagePrompt, TheMarkupFollowsTheProjectorKind) {
  Loaded& l = loaded();
  VisionModel v;
  v.tokens = {*l.tok->find_piece("<|tool>"), *l.tok->find_piece("<mask>"), *l.tok->find_piece("<tool|>")};
  v.projector = "gemma3";
  ImageMarkup m = image_markup_of(v, *l.tok);
  EXPECT_EQ(m.marker, "<|tool>");
  EXPECT_EQ(m.open, "\n\n<|tool>");
  EXPECT_EQ(m.placeholder_text, "<mask>");
  EXPECT_EQ(m.close, "<tool|>\n\n");
  v.projector = "gemma4v";
  m = image_markup_of(v, *l.tok);
  EXPECT_EQ(m.marker, "<mask>");
  EXPECT_EQ(m.open, "<|tool>");
  EXPECT_EQ(m.close, "<tool|>");
  v.tokens.begin = v.tokens.end = -1;  // LLaVA: the placeholder alone
  v.projector = "mlp";
  m = image_markup_of(v, *l.tok);
  EXPECT_EQ(m.marker, "<mask>");
  EXPECT_EQ(m.open + m.close, "");
}

// The cache runs the tower once per distinct image and holds only what it is told to keep.
TEST(ImagePrompt, TheImageCacheEncodesOnceAndKeepsOnlyWhatItIsTold) {
  int calls = 0;
  VisionModel v;
  v.encoder = [&](const vision::Image&) {
    ++calls;
    TowerImage t;
    t.width = 2;
    t.rows = {1, 2, 3, 4};
    return t;
  };
  const std::string a = test::tiny_png(4, 4, [](int, int) { return 0x102030u; });
  const std::string b = test::tiny_png(4, 4, [](int, int) { return 0x405060u; });
  ImageCache cache;
  cache.get(a, v);
  cache.get(a, v);
  cache.get(b, v);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.size(), 2u);
  const std::string* keep[] = {&b};
  cache.keep_only(keep);
  EXPECT_EQ(cache.size(), 1u);
  cache.get(b, v);
  EXPECT_EQ(calls, 2);
  cache.get(a, v);
  EXPECT_EQ(calls, 3);
}

TEST(ImagePrompt, ImagesWithoutATowerNameThePart) {
  ChatRequest r = request(1, "x");
  try {
    encode_chat_images(r, nullptr);
    FAIL() << "no error";
  } catch (const ChatRequestError& e) {
    EXPECT_EQ(e.field(), "messages[0].content[0]");
    EXPECT_EQ(std::string(e.what()),
              "'messages[0].content[0]' is an image and this model has no vision tower (pass --mmproj FILE)");
  }
}

}  // namespace
}  // namespace og
