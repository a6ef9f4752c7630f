// Loading a vision tower next to the text model (runtime/vision_model.h):
// og-synth's tiny Gemma 3 vision model loaded from its HF directory (the
// tower found by itself) and as GGUF + --mmproj gives the same tower, the same
// image token ids and bit-identical rows for one picture; a text-only model
// has none; every bad mmproj is one clear error naming the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "base/error.h"
#include "format/gguf.h"
#include "format/model_source.h"
#include "model/gguf_convert.h"
#include "model/mmproj_gguf.h"
#include "tokenizer/gguf_vocab_export.h"
#include "runtime/run_setup.h"
#include "runtime/vision_model.h"
#include "synth/synth.h"
#include "temp_dir.h"

namespace og {
namespace {

using og::test::TempDir;

struct VisionFiles {
  VisionFiles() {
    spec = synth::tiny_spec(synth::Family::kGemma3);
    spec.vision = true;
    synth::write_gguf(spec, gguf());
    synth::write_mmproj(spec, mmproj());
    synth::write_hf(spec, hf());
  }
  std::string gguf() const { return dir.path("m.gguf"); }
  std::string mmproj() const { return dir.path("mmproj.gguf"); }
  std::string hf() const { return dir.path("hf"); }
  std::string path(const std::string& name) const { return dir.path(name); }
  TempDir dir;
  synth::SynthSpec spec;
};

const VisionFiles& files() {
  static const VisionFiles f;
  return f;
}

LoadedModel load(const std::string& model, const std::string& mmproj = "") {
  ModelSetup s;
  s.model = model;
  s.mmproj = mmproj;
  return load_model(s);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A w x h RGB picture, a gradient shifted by seed.
vision::Image picture(int w, int h, int seed) {
  vision::Image im;
  im.width = w;
  im.height = h;
  im.channels = 3;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) im.pixels.push_back(static_cast<uint8_t>((x * 7 + y * 3 + c * 50 + seed) % 256));
  return im;
}

TEST(VisionModel, HfDirectoryAndMmprojGiveTheSameTowerAndRowsBitForBit) {
  const LoadedModel a = load(files().hf());
  const LoadedModel b = load(files().gguf(), files().mmproj());
  ASSERT_TRUE(a.vision);
  ASSERT_TRUE(b.vision);
  for (const VisionModel* v : {a.vision.get(), b.vision.get()}) {
    EXPECT_EQ(v->projector, "gemma3");
    EXPECT_EQ(v->tokens_per_image, 4);
    EXPECT_EQ(v->width(), 64);
    EXPECT_TRUE(v->bidirectional);
    EXPECT_EQ(v->preprocess.width, 56);
    EXPECT_EQ(v->preprocess.height, 56);
    EXPECT_EQ(v->preprocess.resample, vision::Resample::bilinear);
    EXPECT_EQ(v->preprocess.mean[1], 0.5f);
    EXPECT_EQ(v->preprocess.std[2], 0.5f);
    // ids 512.. in the stories vocabulary: turn start, turn end, image start, image end, soft token
    EXPECT_EQ(v->tokens.begin, 514);
    EXPECT_EQ(v->tokens.end, 515);
    EXPECT_EQ(v->tokens.placeholder, 516);
  }
  EXPECT_EQ(a.vision->describe(), b.vision->describe());
  EXPECT_NE(b.vision->describe().find("56x56 pixels, patch 14, 2 layers, width 32, 4 heads, 4 tokens per image"),
            std::string::npos);
  const vision::Image im = picture(40, 70, 3);
  const TowerImage ra = a.vision->encode(im);
  const TowerImage rb = b.vision->encode(im);
  ASSERT_EQ(ra.n_rows(), 4);
  ASSERT_EQ(ra.width, 64);
  EXPECT_EQ(ra.rows, rb.rows);  // bit for bit: the mmproj holds the HF tensors in f32
  EXPECT_EQ(ra.hash, rb.hash);
  // Another picture gives other rows and another hash.
  const TowerImage other = a.vision->encode(picture(40, 70, 90));
  EXPECT_NE(other.rows, ra.rows);
  EXPECT_NE(other.hash, ra.hash);
  // The bytes path decodes first: bad bytes are the decoder's one-line error.
  EXPECT_NE(error_of([&] { a.vision->encode(std::string_view("not an image")); }).find("image: unknown format"),
            std::string::npos);
}

// offgraph export's path: the HF directory's text model to GGUF and its tower
// to an mmproj (f32), loaded with --mmproj, gives the HF load's rows bit for bit.
TEST(VisionModel, ExportedTextAndMmprojGiveTheHfDirectorysRowsBitForBit) {
  const std::shared_ptr<const ModelSource> src = ModelSource::open(files().hf());
  ConvertOptions o;
  ASSERT_TRUE(weight_type_from_name("f32", &o.type));
  o.metadata = tokenizer_gguf_keys(*src->hf());
  const std::string text = files().path("exported.gguf"), mmproj = files().path("exported-mmproj.gguf");
  export_hf_to_gguf(*src, text, o);
  MmprojWriteOptions mo;
  mo.matrices = DType::F32;
  const VisionTowerConfig c = export_hf_mmproj(*src, mmproj, mo, /*overwrite=*/false);
  EXPECT_EQ(c.mm_tokens_per_image, 4);
  const LoadedModel hf = load(files().hf());
  const LoadedModel exported = load(text, mmproj);
  ASSERT_TRUE(exported.vision);
  EXPECT_EQ(exported.vision->tokens.placeholder, hf.vision->tokens.placeholder);
  const vision::Image im = picture(90, 33, 7);
  EXPECT_EQ(exported.vision->encode(im).rows, hf.vision->encode(im).rows);
  // An existing output is refused unless overwriting; f16 matrices stay close.
  EXPECT_NE(error_of([&] { export_hf_mmproj(*src, mmproj, mo, false); }).find("already exists"), std::string::npos);
  mo.matrices = DType::F16;
  export_hf_mmproj(*src, mmproj, mo, /*overwrite=*/true);
  const LoadedModel half = load(text, mmproj);
  const std::vector<float> a = half.vision->encode(im).rows, b = hf.vision->encode(im).rows;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-2 * (1 + std::abs(b[i]))) << i;
  // A checkpoint without a tower.
  synth::write_hf(synth::tiny_spec(synth::Family::kGemma3), files().path("text-hf"));
  EXPECT_NE(error_of([&] {
              export_hf_mmproj(*ModelSource::open(files().path("text-hf")), files().path("none.gguf"), mo, false);
            }).find("the model has no vision tower (config.json has no vision_config)"),
            std::string::npos);
}

// Gemma 4's image spans (docs/vision.md): E2B/E4B (per-layer inputs, no
// use_bidirectional_attention) are causal, so their images mark no span; a
// model without per-layer inputs (26B-A4B, 31B: "vision") marks one.
TEST(VisionModel, Gemma4MarksImageSpansOnlyWhereALayerOpensThem) {
  TempDir dir;
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kGemma4);
  spec.vision = true;
  synth::write_mmproj(spec, dir.path("g4v.gguf"));
  synth::write_gguf(spec, dir.path("ple.gguf"));
  spec.d_per_layer = 0;
  synth::write_gguf(spec, dir.path("vision.gguf"));
  const LoadedModel e2b = load(dir.path("ple.gguf"), dir.path("g4v.gguf"));
  const LoadedModel big = load(dir.path("vision.gguf"), dir.path("g4v.gguf"));
  ASSERT_TRUE(e2b.vision);
  ASSERT_TRUE(big.vision);
  EXPECT_FALSE(e2b.vision->bidirectional);
  EXPECT_TRUE(big.vision->bidirectional);
}

TEST(VisionModel, ATextOnlyModelHasNoTower) {
  const LoadedModel l = load(files().gguf());
  EXPECT_FALSE(l.vision);
}

// An mmproj GGUF with these keys and no tensors (enough for the checks that
// come before the tower binds).
std::string write_keys(const std::string& name, const std::string& type, int64_t projection) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("clip"));
  if (!type.empty()) w.set("clip.projector_type", GgufValue::make_string(type));
  w.set("clip.vision.projection_dim", GgufValue::make_u32(static_cast<uint32_t>(projection)));
  const std::string path = files().path(name);
  w.write(path);
  return path;
}

TEST(VisionModel, BadMmprojFilesAreOneLineErrors) {
  const std::string m = files().gguf();
  auto err = [&](const std::string& model, const std::string& mmproj) {
    return error_of([&] { load(model, mmproj); });
  };
  EXPECT_NE(err(m, files().path("missing.gguf")).find("--mmproj " + files().path("missing.gguf") + ": no such file"),
            std::string::npos);
  {
    FILE* f = std::fopen(files().path("text.gguf").c_str(), "w");
    std::fputs("not a gguf file at all, just text", f);
    std::fclose(f);
  }
  EXPECT_NE(err(m, files().path("text.gguf")).find(": not a GGUF file"), std::string::npos);
  // A text model given as the mmproj.
  EXPECT_NE(err(m, m).find("not an mmproj (clip) file: clip.projector_type is missing (general.architecture is "
                           "gemma3)"),
            std::string::npos);
  EXPECT_NE(err(m, write_keys("qwen.gguf", "qwen2vl_merger", 64))
                .find("projector type qwen2vl_merger is not supported"),
            std::string::npos);
  // Another text width: the tower's own projection is refused before any tensor is read.
  synth::SynthSpec narrow = files().spec;
  narrow.d_model = 32;
  synth::write_mmproj(narrow, files().path("narrow.gguf"));
  EXPECT_NE(err(m, files().path("narrow.gguf"))
                .find("the vision tower projects to width 32 but the text model's hidden size is 64"),
            std::string::npos);
  // A family without image input here.
  synth::SynthSpec qwen = synth::tiny_spec(synth::Family::kQwen3);
  synth::write_gguf(qwen, files().path("qwen3.gguf"));
  EXPECT_NE(err(files().path("qwen3.gguf"), files().mmproj())
                .find("a gemma3 vision tower needs a gemma3 text model, but the model is qwen3"),
            std::string::npos);
  // A gemma3 model whose tokenizer lacks the image tokens.
  synth::write_gguf(synth::tiny_spec(synth::Family::kGemma3), files().path("plain.gguf"));
  EXPECT_NE(err(files().path("plain.gguf"), files().mmproj()).find("the tokenizer has no <start_of_image> token"),
            std::string::npos);
}

// The mmproj's tensor names are llama.cpp's (the ones bind_gemma3_mmproj reads).
TEST(VisionModel, MmprojNamesAreLlamaCpps) {
  EXPECT_EQ(gemma3_mmproj_name("vision_tower.vision_model.encoder.layers.3.mlp.fc1.weight", ""),
            "v.blk.3.ffn_up.weight");
  EXPECT_EQ(gemma3_mmproj_name("model.vision_tower.vision_model.encoder.layers.0.self_attn.out_proj.bias", "model."),
            "v.blk.0.attn_out.bias");
  EXPECT_EQ(gemma3_mmproj_name("multi_modal_projector.mm_input_projection_weight", ""), "mm.input_projection.weight");
  EXPECT_EQ(gemma3_mmproj_name("vision_tower.vision_model.embeddings.patch_embedding.weight", ""),
            "v.patch_embd.weight");
  EXPECT_EQ(gemma3_mmproj_name("language_model.model.embed_tokens.weight", ""), "");
  const auto f = GgufFile::open(files().mmproj());
  EXPECT_EQ(f->get_string("clip.projector_type").value_or(""), "gemma3");
  EXPECT_EQ(f->get_int("clip.vision.projector.scale_factor").value_or(0), 2);  // 4 x 4 patches pooled to 2 x 2
  EXPECT_NE(f->find("mm.soft_emb_norm.weight"), nullptr);
  EXPECT_NE(f->find("v.blk.1.ffn_down.weight"), nullptr);
}

}  // namespace
}  // namespace og
