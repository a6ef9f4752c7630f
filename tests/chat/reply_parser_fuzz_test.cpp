// ReplyParser on random replies: random bytes mixed with pieces of every
// marker and with well-formed calls. Nothing throws, any split gives the
// whole result, and the output accounts for the input: no byte outside a
// call or a marker is lost.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chat/reply_parser.h"

namespace og {
namespace {

using TF = ToolCallFormat;
using RF = ReasoningFormat;

const std::vector<std::string> kPieces = {
    "<tool_call>", "</tool_call>", "<tool_call", "<tool", "<", ">", "{", "}", "[", "]", "\"", "\\", ",", ":", ";",
    "<|python_tag|>", "<|python", "[TOOL_CALLS]", "[TOOL_", "[ARGS]", "[AR", "[CALL_ID]", "<|tool_call>",
    "<tool_call|>", "<|\"|>", "<|\"", "call:", "<think>", "</think>", "<thi", "</th", "<|channel>thought",
    "<|channel>", "<channel|>", "[THINK]", "[/THINK]", "<|channel|>analysis<|message|>",
    "<|end|><|start|>assistant<|channel|>final<|message|>", "<|end|>", "\n", " ", "\n\n", "\"name\": \"f\"", "\"arguments\": {}",
    "<function=f>", "<parameter=x>", "</parameter>", "</function>", "héllo", "日本",
    "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, {\"b\": null}]}}\n</tool_call>",
    "{\"name\": \"g\", \"parameters\": {\"x\": \"y\"}}",
    "[TOOL_CALLS]h[ARGS]{\"k\": true}",
    "[TOOL_CALLS][{\"name\": \"h\", \"arguments\": {}}]",
    "<|tool_call>call:k{a:<|\"|>b<|\"|>,c:[1,2.5,None]}<tool_call|>",
};

std::string random_reply(std::mt19937& rng) {
  std::string s;
  int n = 1 + rng() % 25;
  for (int i = 0; i < n; ++i) {
    if (rng() % 3 == 0) {
      int bytes = 1 + rng() % 6;
      for (int b = 0; b < bytes; ++b) s += static_cast<char>(rng() % 256);
    } else {
      s += kPieces[rng() % kPieces.size()];
    }
  }
  return s;
}

std::string non_space(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::string_view(" \t\n\r\f\v").find(c) == std::string_view::npos) out += c;
  return out;
}

bool is_subsequence(std::string_view part, std::string_view whole) {
  size_t j = 0;
  for (char c : whole)
    if (j < part.size() && part[j] == c) ++j;
  return j == part.size();
}

struct Markers {
  std::string open, close;
};
Markers markers(RF f) {
  switch (f) {
    case RF::kThink: return {"<think>", "</think>"};
    case RF::kGemma4Channel: return {"<|channel>thought", "<channel|>"};
    case RF::kMistralThink: return {"[THINK]", "[/THINK]"};
    case RF::kHarmony: return {"<|channel|>analysis<|message|>", "<|end|><|start|>assistant<|channel|>final<|message|>"};
    case RF::kNone: break;
  }
  return {};
}

TEST(ReplyParserFuzz, RandomRepliesAreAccountedFor) {
  const ReplyFormat formats[] = {{TF::kHermes, RF::kThink},         {TF::kLlama3Json, RF::kNone},
                                 {TF::kMistral, RF::kMistralThink}, {TF::kGemma4, RF::kGemma4Channel},
                                 {TF::kNone, RF::kThink},           {TF::kNone, RF::kNone},
                                 {TF::kNone, RF::kHarmony}};
  std::mt19937 rng(2024);
  int calls_seen = 0;
  for (const ReplyFormat& f : formats) {
    for (int iter = 0; iter < 150; ++iter) {
      std::string in = random_reply(rng);
      ReplyParserOptions o;
      o.format = f;
      o.starts_in_reasoning = rng() % 4 == 0;
      o.id_seed = 1;
      ParsedReply whole;
      ASSERT_NO_THROW(whole = parse_reply(in, o));
      calls_seen += static_cast<int>(whole.tool_calls.size());

      // The same in random pieces.
      ReplyParser p(o);
      std::string reasoning, content;
      size_t at = 0, n_calls = 0;
      while (at < in.size()) {
        size_t len = 1 + rng() % 9;
        ReplyDelta d = p.feed(std::string_view(in).substr(at, len));
        at += len;
        reasoning += d.reasoning, content += d.content, n_calls += d.tool_calls.size();
      }
      ReplyDelta d = p.finish();
      reasoning += d.reasoning, content += d.content, n_calls += d.tool_calls.size();
      ASSERT_EQ(reasoning, whole.reasoning) << in;
      ASSERT_EQ(content, whole.content) << in;
      ASSERT_EQ(n_calls, 2 * whole.tool_calls.size()) << in;
      ASSERT_EQ(p.tool_calls(), whole.tool_calls) << in;

      // Accounting: what is not a call comes back.
      std::string out = non_space(whole.reasoning) + non_space(whole.content);
      ASSERT_TRUE(is_subsequence(non_space(whole.content), non_space(in))) << in;
      ASSERT_LE(out.size(), in.size()) << in;
      if (whole.tool_calls.empty()) {
        Markers m = markers(f.reasoning);
        std::string expect;
        size_t lead = in.find_first_not_of(" \t\n\r\f\v");
        bool explicit_open = !m.open.empty() && !o.starts_in_reasoning && lead != std::string::npos &&
                             std::string_view(in).substr(lead).starts_with(m.open);
        if (explicit_open || (o.starts_in_reasoning && !m.open.empty())) {
          size_t body = explicit_open ? lead + m.open.size() : 0;
          bool closed = in.find(m.close, body) != std::string::npos;
          expect = (explicit_open ? m.open : "") + whole.reasoning + (closed ? m.close : "") + whole.content;
        } else {
          expect = whole.content;
          ASSERT_TRUE(whole.reasoning.empty()) << in;
        }
        ASSERT_EQ(non_space(expect), non_space(in)) << in;
      }

      // Nothing parsed: the reply is content, byte for byte.
      o.parse_tools = o.parse_reasoning = false;
      ASSERT_EQ(parse_reply(in, o).content, in);
    }
  }
  EXPECT_GT(calls_seen, 50);  // the well-formed pieces do get parsed
}

}  // namespace
}  // namespace og
