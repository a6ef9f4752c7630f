// The synthetic gpt-oss tokenizer (og-synth's "harmony"): o200k_harmony's
// 201088 ids, the harmony control tokens at their real ids and matched as
// single tokens, no BOS added, <|return|> as EOS; the GGUF (gpt2 vocabulary,
// pre gpt-4o) and HF tokenizer.json forms give the same ids, and the HF form
// exports to the GGUF's pre-tokenizer; the chat template is detected as
// harmony and the turn stops at <|return|> and <|call|>.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <random>

#include "chat/chat_template.h"
#include "format/chat_template_source.h"
#include "format/gguf.h"
#include "synth/synth.h"
#include "tokenizer/gguf_vocab_export.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

struct Files {
  std::string dir, gguf, hf;
};

struct RemoveAtExit {  // the two ~100 MB forms are not left behind
  std::string dir;
  ~RemoveAtExit() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// The tiny gpt-oss model in both layouts (its tokenizer is the family's own),
// made once per process and removed at exit.
const Files& files() {
  static const Files f = [] {
    Files x;
    x.dir = (std::filesystem::temp_directory_path() / ("og_harmony_tok_" + std::to_string(std::random_device{}()))).string();
    std::filesystem::create_directories(x.dir);
    synth::SynthSpec spec = synth::tiny_spec(synth::Family::kGptOss);
    spec.tokenizer = "harmony";  // the gpt-oss-20b preset's; the tiny model's default is stories
    spec.n_layers = 2;  // the tokenizer is the point: a narrower model writes faster
    spec.d_model = 32;
    spec.head_dim = 8;
    x.gguf = x.dir + "/g.gguf";
    x.hf = x.dir + "/hf";
    synth::write_gguf(spec, x.gguf);
    synth::write_hf(spec, x.hf);
    return x;
  }();
  static const RemoveAtExit cleanup{f.dir};
  return f;
}

// Each form's tokenizer, loaded once (a load of the 201088 pieces and their
// merges is most of this test's time).
const Tokenizer* loaded(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& t = cache[path];
  if (!t) t = Tokenizer::from_path(path);
  return t.get();
}

constexpr int32_t kStartOfText = 199998, kEndOfText = 199999, kReturn = 200002, kConstrain = 200003,
                  kChannel = 200005, kStart = 200006, kEnd = 200007, kMessage = 200008, kCall = 200012;

void RealSizeAndControlTokenIds() {
  for (const std::string& path : {files().gguf, files().hf}) {
    const Tokenizer* tok = loaded(path);
    EXPECT_EQ(tok->n_vocab(), 201088) << path;
    const std::pair<const char*, int32_t> named[] = {
        {"<|startoftext|>", kStartOfText}, {"<|endoftext|>", kEndOfText}, {"<|return|>", kReturn},
        {"<|constrain|>", kConstrain},     {"<|channel|>", kChannel},     {"<|start|>", kStart},
        {"<|end|>", kEnd},                 {"<|message|>", kMessage},     {"<|call|>", kCall},
        {"<|endofprompt|>", 200018},       {"<|reserved_200000|>", 200000}, {"<|reserved_201087|>", 201087}};
    for (const auto& [text, want] : named) EXPECT_EQ(tok->find_piece(text), std::optional<int32_t>(want)) << path << " " << text;
    EXPECT_EQ(tok->token_type(kStart), TokenType::kControl) << path;
    // The control tokens are single ids; the words between are Llama 3's pieces; no BOS is added.
    const std::string text = "<|start|>assistant<|channel|>final<|message|>";
    const std::vector<int32_t> ids = tok->encode(text, true, true);
    ASSERT_EQ(ids.size(), 5u) << path;
    EXPECT_EQ(ids[0], kStart) << path;
    EXPECT_EQ(tok->piece(ids[1]), "assistant") << path;
    EXPECT_LT(ids[1], 128000) << path;
    EXPECT_EQ(ids[2], kChannel) << path;
    EXPECT_EQ(tok->piece(ids[3]), "final") << path;
    EXPECT_EQ(ids[4], kMessage) << path;
    EXPECT_FALSE(tok->special().add_bos) << path;
    EXPECT_EQ(tok->special().eos, kReturn) << path;
    EXPECT_EQ(tok->decode(ids, false), text) << path;
    // Without parse_special the markers are text.
    EXPECT_GT(tok->encode("<|start|>", false, false).size(), 1u) << path;
  }
}

void GgufKeysAsLlamaCppWritesThemForGptOss() {
  auto f = GgufFile::open(files().gguf);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), std::optional<std::string>("gpt2"));
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), std::optional<std::string>("gpt-4o"));
  EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id"), std::optional<int64_t>(kStartOfText));
  EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), std::optional<int64_t>(kReturn));
  EXPECT_EQ(f->get_int("tokenizer.ggml.padding_token_id"), std::optional<int64_t>(kEndOfText));
  // The embedding and output matrices have the vocabulary's rows.
  for (const char* name : {"token_embd.weight", "output.weight"}) {
    const TensorInfo* t = f->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape.front(), 201088) << name;
  }
  // Our export of the HF form names the same pre-tokenizer (its regex is o200k's).
  bool seen = false;
  for (const auto& [key, value] : tokenizer_gguf_keys(files().hf))
    if (key == "tokenizer.ggml.pre") {
      seen = true;
      EXPECT_EQ(value.s, "gpt-4o");
    }
  EXPECT_TRUE(seen);
}

void GgufAndTokenizerJsonGiveTheSameIds() {
  const Tokenizer* g = loaded(files().gguf);
  const Tokenizer* h = loaded(files().hf);
  ASSERT_EQ(g->n_vocab(), h->n_vocab());
  for (const std::string text :
       {"Once upon a time, there was a little girl named Lily.", "  two  spaces\n", "CamelCaseWords don't 12345",
        "tab\there \xC3\xA9t\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87", "<|start|>user<|message|>Hi<|end|><|start|>assistant",
        "a/b\n\n/c", ""}) {
    for (bool special : {false, true}) EXPECT_EQ(g->encode(text, true, special), h->encode(text, true, special)) << text;
    EXPECT_EQ(g->decode(g->encode(text, false, false)), text) << text;
    EXPECT_EQ(h->decode(h->encode(text, false, false)), text) << text;
  }
  EXPECT_EQ(g->special().stop_ids, h->special().stop_ids);
}

void ChatTemplateIsHarmonyAndStopsOnReturnAndCall() {
  for (const std::string& path : {files().gguf, files().hf}) {
    const std::optional<std::string> jinja = read_chat_template(path);
    ASSERT_TRUE(jinja.has_value()) << path;
    EXPECT_EQ(detect_chat_template(*jinja), std::optional<std::string>("harmony")) << path;
    auto tmpl = make_chat_template("auto", jinja);
    const Tokenizer* tok = loaded(path);
    const std::vector<int32_t> stops = chat_stop_ids(*tmpl, *tok);
    for (int32_t id : {kReturn, kCall}) EXPECT_NE(std::find(stops.begin(), stops.end(), id), stops.end()) << path << id;
    EXPECT_EQ(std::find(stops.begin(), stops.end(), kEnd), stops.end()) << path;  // <|end|> closes a message only
    const std::vector<ChatMessage> msgs = {{"user", "Hi"}};
    const std::vector<int32_t> ids = encode_chat(*tok, tmpl->render_segments(msgs, true), true);
    ASSERT_GE(ids.size(), 2u) << path;
    EXPECT_EQ(ids[0], kStart) << path;
    EXPECT_EQ(ids[ids.size() - 2], kStart) << path;  // ... <|start|> assistant
    EXPECT_EQ(tok->piece(ids.back()), "assistant") << path;
  }
}


// One test (one process): each loads the 201088-token vocabulary from files
// written once, which took 10-15 s per process as four tests.
TEST(HarmonySynthTokenizer, IdsKeysFormsAndChatTemplate) {
  RealSizeAndControlTokenIds();
  GgufKeysAsLlamaCppWritesThemForGptOss();
  GgufAndTokenizerJsonGiveTheSameIds();
  ChatTemplateIsHarmonyAndStopsOnReturnAndCall();
}

}  // namespace
}  // namespace og
