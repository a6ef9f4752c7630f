// Bad inputs: every unsupported component or malformed vocabulary is one
// og::Error naming what is wrong, never a crash or a silent fallback.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/gguf.h"
#include "tokenizer/loaders.h"
#include "tokenizer/tokenizer.h"
#include "temp_dir.h"

namespace og {
namespace {

using nlohmann::json;

const std::string kModels = std::string(OG_TESTDATA_DIR) + "/models/";

// Runs f and returns the og::Error message ("" when nothing was thrown).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

json stories_json() { return json::parse(read_text_file(kModels + "stories260K-hf/tokenizer.json")); }

std::string load_error(const json& j) {
  return error_of([&] { tok::load_tokenizer_json_text(j.dump(), "test.json"); });
}

TEST(TokenizerErrors, UnsupportedHfComponentsAreNamed) {
  json j = stories_json();
  j["normalizer"] = {{"type", "BertNormalizer"}};
  EXPECT_NE(load_error(j).find("unsupported normalizer type 'BertNormalizer'"), std::string::npos) << load_error(j);
  j = stories_json();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "Precompiled"}}}}};
  EXPECT_NE(load_error(j).find("'Precompiled'"), std::string::npos);
  j = stories_json();
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  EXPECT_NE(load_error(j).find("unsupported pre_tokenizer type 'BertPreTokenizer'"), std::string::npos);
  j = stories_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}};
  EXPECT_NE(load_error(j).find("'Sideways'"), std::string::npos);
  j = stories_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_NE(load_error(j).find("cannot compile pre-tokenizer regex '(unclosed'"), std::string::npos);
  j = stories_json();
  j["model"]["type"] = "WordPiece";  // read, but only with BERT's normalizer and pre-tokenizer
  EXPECT_NE(load_error(j).find("a WordPiece tokenizer with"), std::string::npos) << load_error(j);
  j = stories_json();
  j["model"]["type"] = "Unigram";
  EXPECT_NE(load_error(j).find("'Unigram'"), std::string::npos);
  j = stories_json();
  j["decoder"] = {{"type", "CTC"}};
  EXPECT_NE(load_error(j).find("unsupported decoder type 'CTC'"), std::string::npos);
  j = stories_json();
  j["post_processor"] = {{"type", "Mystery"}};
  EXPECT_NE(load_error(j).find("unsupported post_processor type 'Mystery'"), std::string::npos);
  j = stories_json();
  j["model"]["continuing_subword_prefix"] = "##";
  EXPECT_NE(load_error(j).find("continuing_subword_prefix"), std::string::npos);
}

TEST(TokenizerErrors, MalformedTokenizerJson) {
  EXPECT_NE(error_of([] { tok::load_tokenizer_json_text("{not json", "x.json"); }).find("x.json: malformed"),
            std::string::npos);
  json j = stories_json();
  j["model"]["vocab"] = json::object();
  EXPECT_NE(load_error(j).find("model.vocab is missing or empty"), std::string::npos);
  j = stories_json();
  j["model"]["merges"] = {42};
  EXPECT_NE(load_error(j).find("merge"), std::string::npos);
  j = stories_json();
  j["added_tokens"][0]["id"] = -5;
  EXPECT_NE(load_error(j).find("bad id"), std::string::npos);
  // Floats (whole or huge) are not ids: an error, never a narrowing conversion.
  j = stories_json();
  j["model"]["vocab"]["<unk>"] = 4.35556e+86;
  EXPECT_NE(load_error(j).find("model.vocab '<unk>' is not an integer id"), std::string::npos) << load_error(j);
  j = stories_json();
  j["added_tokens"][0]["id"] = 1.0;
  EXPECT_NE(load_error(j).find("added_tokens entry is not an integer id"), std::string::npos);
  j = stories_json();
  j["post_processor"]["special_tokens"]["<s>"]["ids"] = {1e300};
  EXPECT_NE(load_error(j).find("post_processor special token '<s>' is not an integer id"), std::string::npos);
  j = stories_json();
  j["model"]["vocab"]["<unk>"] = 1ull << 40;
  EXPECT_NE(load_error(j).find("bad id 1099511627776"), std::string::npos);
  j = stories_json();
  j["decoder"] = {{"type", "Strip"}, {"content", " "}, {"start", 1e300}, {"stop", 0}};
  EXPECT_NE(load_error(j).find("decoder Strip start is not a count"), std::string::npos) << load_error(j);
  j = stories_json();
  j["model"]["unk_token"] = "<nope>";
  EXPECT_NE(load_error(j).find("unk_token '<nope>'"), std::string::npos);
}

TEST(TokenizerErrors, NormalizersWork) {
  json j = stories_json();
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "NFC"}},
                       {{"type", "Lowercase"}},
                       {{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}};
  auto tok = tok::load_tokenizer_json_text(j.dump(), "nfc.json");
  // NFC composes e + U+0301 into U+00E9; lowercasing maps "ONCE" to "once".
  EXPECT_EQ(tok->encode("e\xCC\x81", false, false), tok->encode("\xC3\xA9", false, false));
  EXPECT_EQ(tok->encode("ONCE upon", false, false), tok->encode("once upon", false, false));
}

std::unique_ptr<Tokenizer> gguf_tok(GgufWriter& w) {
  static std::vector<uint8_t> bytes;  // the parsed file refers to them
  bytes = w.serialize();
  auto g = GgufFile::parse(bytes.data(), bytes.size(), "test.gguf");
  return Tokenizer::from_gguf(*g);
}

GgufValue strings(std::vector<std::string> v) {
  std::vector<GgufValue> e;
  for (auto& s : v) e.push_back(GgufValue::make_string(std::move(s)));
  return GgufValue::make_array(GgufType::STRING, std::move(e));
}

TEST(TokenizerErrors, BadGgufVocabularies) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", GgufValue::make_string("llama"));
  EXPECT_NE(error_of([&] { gguf_tok(w); }).find("vocabulary has no tokens"), std::string::npos);
  w.set("tokenizer.ggml.tokens", strings({}));
  EXPECT_NE(error_of([&] { gguf_tok(w); }).find("vocabulary has no tokens"), std::string::npos);

  GgufWriter b;
  b.set("tokenizer.ggml.model", GgufValue::make_string("gpt2"));
  b.set("tokenizer.ggml.tokens", strings({"a", "b", "ab"}));
  EXPECT_NE(error_of([&] { gguf_tok(b); }).find("without merges"), std::string::npos);
  b.set("tokenizer.ggml.merges", strings({"a b"}));
  b.set("tokenizer.ggml.pre", GgufValue::make_string("klingon"));
  EXPECT_NE(error_of([&] { gguf_tok(b); }).find("unknown pre-tokenizer type tokenizer.ggml.pre = 'klingon'"),
            std::string::npos);
  b.set("tokenizer.ggml.pre", GgufValue::make_string("gpt-2"));
  EXPECT_EQ(gguf_tok(b)->encode("ab", false, false), std::vector<int32_t>{2});
  b.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(7));
  EXPECT_NE(error_of([&] { gguf_tok(b); }).find("tokenizer.ggml.eos_token_id = 7 is outside the vocabulary"),
            std::string::npos);
  b.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(4294967295u));
  EXPECT_EQ(gguf_tok(b)->special().eos, -1);
  b.set("tokenizer.ggml.add_bos_token", GgufValue::make_bool(true));
  EXPECT_NE(error_of([&] { gguf_tok(b); }).find("no BOS token"), std::string::npos);

  GgufWriter c;
  c.set("tokenizer.ggml.model", GgufValue::make_string("t5"));
  c.set("tokenizer.ggml.tokens", strings({"a"}));
  EXPECT_NE(error_of([&] { gguf_tok(c); }).find("unsupported tokenizer.ggml.model 't5'"), std::string::npos);
  GgufWriter d;
  EXPECT_NE(error_of([&] { gguf_tok(d); }).find("tokenizer.ggml.model missing"), std::string::npos);
  GgufWriter e;
  e.set("tokenizer.ggml.model", GgufValue::make_string("llama"));
  e.set("tokenizer.ggml.tokens", strings({"<unk>", "<s>", "</s>"}));
  e.set("tokenizer.ggml.scores", GgufValue::make_array(GgufType::F32, {GgufValue::make_f32(0)}));
  EXPECT_NE(error_of([&] { gguf_tok(e); }).find("tokenizer.ggml.scores has 1 entries for 3 tokens"),
            std::string::npos);
}

// A few entries with an id near 2^24 must not make a vocabulary of millions
// of placeholders (the fuzzer's 19 KB file took 30 s): holes beyond both
// 65536 and the number of named ids are an error; real gaps still load.
TEST(TokenizerErrors, SparseIdsAreAnErrorNotMillionsOfPlaceholders) {
  json j = stories_json();
  j["model"]["vocab"]["far"] = 4488882;
  const std::string e = load_error(j);
  EXPECT_NE(e.find("test.json: the vocabulary's ids go up to 4488882 but only"), std::string::npos) << e;
  j = stories_json();
  j["added_tokens"][0]["id"] = 16777215;
  EXPECT_NE(load_error(j).find("ids go up to 16777215"), std::string::npos) << load_error(j);
  // A gap of 65536 ids loads, its ids are unused placeholders.
  j = stories_json();
  const int64_t n = static_cast<int64_t>(j["model"]["vocab"].size());
  j["model"]["vocab"]["gap_token"] = n + 65536;
  std::unique_ptr<tok::PipelineTokenizer> t;
  ASSERT_NO_THROW(t = tok::load_tokenizer_json_text(j.dump(), "gap.json"));
  EXPECT_EQ(t->n_vocab(), n + 65537);
  EXPECT_EQ(t->token_bytes(static_cast<int32_t>(n + 65536)), "gap_token");
  // vocab.json + merges.txt takes the same check.
  test::TempDir dir;
  {
    std::FILE* f = std::fopen(dir.path("vocab.json").c_str(), "w");
    std::fputs(R"({"a": 0, "b": 1, "ab": 9000000})", f);
    std::fclose(f);
    f = std::fopen(dir.path("merges.txt").c_str(), "w");
    std::fputs("a b\n", f);
    std::fclose(f);
  }
  const std::string v = dir.path("vocab.json");
  const std::string e2 = error_of([&] { tok::load_vocab_merges(v, dir.path("merges.txt"), "gpt2"); });
  EXPECT_NE(e2.find("vocab.json: the vocabulary's ids go up to 9000000 but only 3 of them name a token"),
            std::string::npos)
      << e2;
}

TEST(TokenizerErrors, BadPathsAndIds) {
  EXPECT_NE(error_of([] { Tokenizer::from_path("/nonexistent/tokenizer.json"); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_path(std::string(OG_TESTDATA_DIR)); }).find("no tokenizer.json"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_path(kModels + "stories260K/stories260K.bin"); }).find("unknown tokenizer file kind"),
            std::string::npos);
  auto tok = Tokenizer::from_path(kModels + "stories260K/stories260K.gguf");
  const std::vector<int32_t> bad = {1, 512};
  EXPECT_NE(error_of([&] { tok->decode(bad); }).find("token id 512 out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { tok->token_bytes(-1); }).find("token id -1 out of range"), std::string::npos);
}


// Ill-typed special-id fields beside a tokenizer are errors naming file and key, never silently ignored.
TEST(TokenizerErrors, IllTypedHfConfigFields) {
  const std::string dir = og::test::temp_path("og_tok_cfg");
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  const std::string tj = read_text_file(kModels + "stories260K-hf/tokenizer.json");
  auto write = [&](const std::string& name, const std::string& text) {
    std::FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  };
  write("tokenizer.json", tj);
  struct Case {
    const char* file;
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"generation_config.json", R"({"eos_token_id": "x"})", "generation_config.json: eos_token_id must be a token id"},
      {"generation_config.json", R"({"eos_token_id": [2, 1.5]})", "eos_token_id must be a token id"},
      {"generation_config.json", R"({"eos_token_id": 99999999999})", "eos_token_id must be a token id"},
      {"generation_config.json", R"({"pad_token_id": "p"})", "pad_token_id must be a token id"},
      {"config.json", R"({"eos_token_id": 100000})", "outside the vocabulary"},
      {"tokenizer_config.json", R"({"add_bos_token": "yes"})", "add_bos_token must be true or false"},
  };
  for (const Case& c : cases) {
    for (const char* f : {"generation_config.json", "config.json", "tokenizer_config.json"}) std::remove((dir + "/" + f).c_str());
    write(c.file, c.text);
    EXPECT_NE(error_of([&] { Tokenizer::from_path(dir); }).find(c.expect), std::string::npos) << c.text;
  }
  // null and lists are fine.
  for (const char* f : {"generation_config.json", "config.json", "tokenizer_config.json"}) std::remove((dir + "/" + f).c_str());
  write("generation_config.json", R"({"eos_token_id": [2, 1], "pad_token_id": null})");
  write("tokenizer_config.json", R"({"add_bos_token": null})");
  const auto tok = Tokenizer::from_path(dir);
  EXPECT_EQ(tok->special().eos, 2);
}

}  // namespace
}  // namespace og
