// The gemma4 tokenizer (GEMMA4.md §2 tokenizer note) on the synthetic gemma4
// vocabulary: spaces as U+2581 without a prefix space, newline runs as whole
// pieces, byte fallback, BOS always added, user-defined pieces matched in
// text; the GGUF (tokenizer.ggml.model = gemma4) and HF tokenizer.json forms
// give the same ids; the chat template is recognised and stops on <turn|>.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "base/error.h"
#include "chat/chat_template.h"
#include "format/chat_template_source.h"
#include "format/gguf.h"
#include "synth/synth.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

struct Files {
  std::string dir, gguf, hf;
};

const Files& files() {
  static const Files f = [] {
    Files x;
    x.dir = (std::filesystem::temp_directory_path() / ("og_gemma4_tok_" + std::to_string(std::random_device{}()))).string();
    std::filesystem::create_directories(x.dir);
    const synth::SynthSpec spec = synth::tiny_spec(synth::Family::kGemma4);
    x.gguf = x.dir + "/g.gguf";
    x.hf = x.dir + "/hf";
    synth::write_gguf(spec, x.gguf);
    synth::write_hf(spec, x.hf);
    return x;
  }();
  return f;
}

int32_t id(const Tokenizer& t, const char* piece) {
  const std::optional<int32_t> i = t.find_piece(piece);
  EXPECT_TRUE(i.has_value()) << piece;
  return i.value_or(-1);
}

TEST(Gemma4Tokenizer, GgufRules) {
  auto tok = Tokenizer::from_path(files().gguf);
  EXPECT_EQ(tok->kind(), "gguf gemma4 (BPE over UTF-8)");
  EXPECT_TRUE(tok->special().add_bos);
  EXPECT_EQ(tok->special().bos, id(*tok, "<bos>"));
  const std::vector<int32_t> ids = tok->encode("Once upon a time", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], id(*tok, "<bos>"));
  EXPECT_EQ(ids[1], id(*tok, "O"));  // no space prefix: "Once" does not start with U+2581
  EXPECT_EQ(tok->piece(ids.back()), "\xE2\x96\x81time");
  EXPECT_EQ(tok->decode(ids), "Once upon a time");
  // Newline runs are single pieces; a run longer than any piece splits into them.
  const std::vector<int32_t> nl = tok->encode("a\n\nb\n\n\n\n", false, false);
  EXPECT_EQ(nl, (std::vector<int32_t>{id(*tok, "a"), id(*tok, "\n\n"), id(*tok, "b"), id(*tok, "\n\n"),
                                      id(*tok, "\n\n")}));
  EXPECT_EQ(tok->encode("\n\n\n", false, false), std::vector<int32_t>{id(*tok, "\n\n\n")});
  // Characters without a piece fall back to their bytes and decode back.
  const std::string odd = "\xEA\x99\xAE 5 \xF0\x9F\x98\x80";  // U+A66E, an emoji: no pieces
  const std::vector<int32_t> b = tok->encode(odd, false, false);
  EXPECT_EQ(b[0], id(*tok, "<0xEA>"));
  EXPECT_EQ(tok->decode(b), odd);
  // Control pieces only with parse_special; user-defined ones always.
  EXPECT_NE(tok->encode("<|turn>", false, false), std::vector<int32_t>{id(*tok, "<|turn>")});
  EXPECT_EQ(tok->encode("<|turn>", false, true), std::vector<int32_t>{id(*tok, "<|turn>")});
  EXPECT_EQ(tok->encode("<|channel>", false, false), std::vector<int32_t>{id(*tok, "<|channel>")});
  const auto& stop = tok->special().stop_ids;
  EXPECT_NE(std::find(stop.begin(), stop.end(), id(*tok, "<turn|>")), stop.end());
  EXPECT_NE(std::find(stop.begin(), stop.end(), id(*tok, "<eos>")), stop.end());
}

// The vocabulary's padding (<unusedN>, GGUF token type 5) spells nothing when
// decoded, whole or streamed, special tokens shown or not: llama.cpp prints
// nothing for such a token, and neither may `offgraph run`.
TEST(Gemma4Tokenizer, UnusedPiecesDecodeToNothing) {
  auto tok = Tokenizer::from_path(files().gguf);
  const int32_t last = tok->n_vocab() - 1;
  ASSERT_EQ(tok->piece(last), "<unused" + std::to_string(last) + ">");
  ASSERT_EQ(tok->token_type(last), TokenType::kUnused);
  EXPECT_EQ(tok->token_bytes(last), "");
  const std::vector<int32_t> text = tok->encode("Once upon a time", false, false);
  ASSERT_GE(text.size(), 2u);
  std::vector<int32_t> with = text;
  with.insert(with.begin() + 1, last);
  with.push_back(last);
  for (bool skip : {true, false}) {
    EXPECT_EQ(tok->decode(with, skip), tok->decode(text, skip)) << skip;
    StreamingDecoder d(*tok, skip);
    std::string streamed;
    for (int32_t i : with) streamed += d.push(i);
    streamed += d.flush();
    EXPECT_EQ(streamed, tok->decode(text, skip)) << skip;
  }
}

TEST(Gemma4Tokenizer, GgufAndTokenizerJsonGiveTheSameIds) {
  auto g = Tokenizer::from_path(files().gguf);
  auto h = Tokenizer::from_path(files().hf);
  ASSERT_EQ(g->n_vocab(), h->n_vocab());
  for (const std::string text : {"Once upon a time, there was a little girl named Lily.", "  two  spaces\n",
                                 "\n\n\nlead", "tab\there \xC3\xA9t\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87",
                                 "<|turn>user\nHi<turn|>\n", "x\n\n\n\n\ny", ""}) {
    for (bool special : {false, true})
      EXPECT_EQ(g->encode(text, true, special), h->encode(text, true, special)) << text;
    EXPECT_EQ(g->decode(g->encode(text, false, false)), text) << text;
    EXPECT_EQ(h->decode(h->encode(text, false, false)), text) << text;
  }
  EXPECT_EQ(g->special().stop_ids, h->special().stop_ids);
}

TEST(Gemma4Tokenizer, ChatTemplateIsRecognisedAndStopsOnTurnEnd) {
  for (const std::string& path : {files().gguf, files().hf}) {
    const std::optional<std::string> jinja = read_chat_template(path);
    ASSERT_TRUE(jinja.has_value()) << path;
    EXPECT_EQ(detect_chat_template(*jinja), std::optional<std::string>("gemma4")) << path;
    auto tmpl = make_chat_template("auto", jinja);
    auto tok = Tokenizer::from_path(path);
    const std::vector<int32_t> stops = chat_stop_ids(*tmpl, *tok);
    EXPECT_NE(std::find(stops.begin(), stops.end(), id(*tok, "<turn|>")), stops.end()) << path;
    const std::vector<ChatMessage> msgs = {{"user", "Hi"}};
    const std::vector<int32_t> ids = encode_chat(*tok, tmpl->render_segments(msgs, true), true);
    // <bos> <|turn> user \n Hi <turn|> \n <|turn> model \n: the markers are single special tokens.
    ASSERT_GE(ids.size(), 4u);
    EXPECT_EQ(ids[0], id(*tok, "<bos>"));
    EXPECT_EQ(ids[1], id(*tok, "<|turn>"));
    EXPECT_EQ(std::count(ids.begin(), ids.end(), id(*tok, "<bos>")), 1);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), id(*tok, "<turn|>")), 1);
  }
}

TEST(Gemma4Chat, EarlierModelTurnsLoseTheirThinking) {
  auto t = make_chat_template("gemma4", std::nullopt);
  const std::vector<ChatMessage> msgs = {
      {"user", " Hi "}, {"assistant", "<|channel>thought\nthe user greets<channel|>Hello! "}, {"user", "More"}};
  EXPECT_EQ(t->render(msgs, true),
            "<|turn>user\nHi<turn|>\n<|turn>model\nHello! <turn|>\n<|turn>user\nMore<turn|>\n<|turn>model\n");
  // An unclosed channel runs to the end of the turn.
  const std::vector<ChatMessage> open = {{"user", "Hi"}, {"assistant", "ok<|channel>thinking..."}, {"user", "x"}};
  EXPECT_EQ(t->render(open, false), "<|turn>user\nHi<turn|>\n<|turn>model\nok<turn|>\n<|turn>user\nx<turn|>\n");
  // The reply as generated is not a prefix of the next render (a chat turn
  // takes it back, runtime/chat_turn.h); the reply's prompt is, and the
  // render continues it with the reply as history renders it.
  const std::string prompt = t->render(std::span(msgs).first(1), true);
  const std::string full = t->render(msgs, true);
  EXPECT_NE(full.rfind(prompt + msgs[1].content, 0), 0u);
  ASSERT_EQ(full.rfind(prompt, 0), 0u);
  EXPECT_EQ(full.substr(prompt.size()), "Hello! <turn|>\n<|turn>user\nMore<turn|>\n<|turn>model\n");
}

TEST(Gemma4Tokenizer, BadVocabularyIsNamed) {
  auto f = GgufFile::open(files().gguf);
  GgufWriter w;
  for (const auto& [k, v] : f->metadata())
    if (k != "tokenizer.ggml.merges") w.set(k, v);
  const std::string bad = files().dir + "/nomerges.gguf";
  w.write(bad);
  try {
    Tokenizer::from_path(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.merges"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace og
