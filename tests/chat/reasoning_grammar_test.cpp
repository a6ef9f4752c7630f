// Reasoning before a constrained answer (chat/reasoning_grammar.h): for every
// reasoning format, a structured-output grammar admits the block first (when
// the model may open it, or must close the one the prompt opened) and then
// only the answer; with no room the answer starts at once; the tool-call
// grammar follows the same rule (thinking off: no block before the call).
#include <gtest/gtest.h>

#include "chat/reasoning_grammar.h"
#include "chat/tool_grammar.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace og {
namespace {

using json = nlohmann::ordered_json;

bool matches(const std::string& grammar_text, const std::string& reply) {
  grammar::Matcher m(grammar::Grammar::parse(grammar_text));
  return m.accept_bytes(reply) && m.is_complete();
}

const std::string kAnswer = R"({"a": 1})";

std::string answer_grammar() {
  return grammar::json_schema_to_grammar(json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}},
      "required": ["a"]})"),
                                         {});
}

struct Case {
  ReasoningFormat format;
  std::string block;  // a whole reasoning block as the model writes it
  std::string body_close;  // the block without its opener (the prompt opened it)
};

std::vector<Case> cases() {
  return {
      {ReasoningFormat::kThink, "<think>\nhmm </ <think\n</think>\n\n", "hmm\n</think>\n\n"},
      {ReasoningFormat::kGemma4Channel, "<|channel>thought\nhmm <channel<channel|>", "thought\nhmm<channel|>"},
      {ReasoningFormat::kMistralThink, "[THINK]hmm [/THIN[/THINK]", "hmm[/THINK]"},
      {ReasoningFormat::kHarmony, "<|channel|>analysis<|message|>hmm <|en<|end|><|start|>assistant",
       "hmm<|end|><|start|>assistant"},
  };
}

std::string header(ReasoningFormat f) { return reasoning_block(f).answer_header; }

TEST(ReasoningGrammar, OptionalBlockThenTheAnswer) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(reasoning_format_name(c.format));
    const std::string g = structured_output_grammar(answer_grammar(), c.format, ReasoningRoom::kOptional);
    EXPECT_TRUE(matches(g, c.block + header(c.format) + kAnswer));
    EXPECT_TRUE(matches(g, header(c.format) + kAnswer));  // the model may skip it
    EXPECT_FALSE(matches(g, c.block));                      // never the block alone
    EXPECT_FALSE(matches(g, c.block + "text" + header(c.format) + kAnswer));
    EXPECT_FALSE(matches(g, c.block + c.block + header(c.format) + kAnswer));  // one block
  }
}

TEST(ReasoningGrammar, OpenBlockMustCloseFirst) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(reasoning_format_name(c.format));
    const std::string g = structured_output_grammar(answer_grammar(), c.format, ReasoningRoom::kOpen);
    EXPECT_TRUE(matches(g, c.body_close + header(c.format) + kAnswer));
    EXPECT_FALSE(matches(g, header(c.format) + kAnswer));
  }
}

TEST(ReasoningGrammar, NoRoomStartsTheAnswerAtOnce) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(reasoning_format_name(c.format));
    const std::string g = structured_output_grammar(answer_grammar(), c.format, ReasoningRoom::kNone);
    EXPECT_TRUE(matches(g, header(c.format) + kAnswer));
    EXPECT_FALSE(matches(g, c.block + header(c.format) + kAnswer));
  }
  // No reasoning format and no header: the answer's grammar as given.
  EXPECT_EQ(structured_output_grammar(answer_grammar(), ReasoningFormat::kNone, ReasoningRoom::kOptional),
            answer_grammar());
}

TEST(ReasoningGrammar, GbnfWithItsOwnRuleNames) {
  // A client's grammar whose rules might clash with ours (think-body, root).
  const std::string gbnf = "root ::= think-body\nthink-body ::= \"yes\" | \"no\"\n";
  const std::string g = structured_output_grammar(gbnf, ReasoningFormat::kThink, ReasoningRoom::kOptional);
  EXPECT_TRUE(matches(g, "<think>x</think>yes"));
  EXPECT_TRUE(matches(g, "no"));
  EXPECT_FALSE(matches(g, "<think>x</think>maybe"));
}

TEST(ReasoningGrammar, RoomFollowsTheParserOptions) {
  ReplyParserOptions o;
  o.format.reasoning = ReasoningFormat::kThink;
  EXPECT_EQ(reasoning_room(o), ReasoningRoom::kOptional);
  o.thinking_off = true;
  EXPECT_EQ(reasoning_room(o), ReasoningRoom::kNone);
  o.starts_in_reasoning = true;  // the prompt opened it: it must still be closed
  EXPECT_EQ(reasoning_room(o), ReasoningRoom::kOpen);
  o.parse_reasoning = false;
  EXPECT_EQ(reasoning_room(o), ReasoningRoom::kNone);
  o = {};
  EXPECT_EQ(reasoning_room(o), ReasoningRoom::kNone);  // no reasoning format
}

TEST(ReasoningGrammar, PromptThatClosedTheBlock) {
  EXPECT_TRUE(prompt_closes_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", ReasoningFormat::kThink));
  EXPECT_FALSE(prompt_closes_reasoning("<|im_start|>assistant\n", ReasoningFormat::kThink));
  EXPECT_FALSE(prompt_closes_reasoning("<think>\nold</think>\n\nanswer<|im_end|>\n<|im_start|>assistant\n",
                                       ReasoningFormat::kThink));
  EXPECT_TRUE(prompt_closes_reasoning("<|turn>model\n<|channel>thought\n<channel|>", ReasoningFormat::kGemma4Channel));
  EXPECT_FALSE(prompt_closes_reasoning("<|turn>model\n", ReasoningFormat::kGemma4Channel));
  // gpt-oss: every prompt ends "<|end|><|start|>assistant"; only a final header closes.
  EXPECT_FALSE(prompt_closes_reasoning("<|message|>Hi<|end|><|start|>assistant", ReasoningFormat::kHarmony));
  EXPECT_TRUE(prompt_closes_reasoning("<|start|>assistant<|channel|>final<|message|>", ReasoningFormat::kHarmony));
  EXPECT_FALSE(prompt_closes_reasoning("[THINK]x[/THINK]y[/SYSTEM_PROMPT][INST]Hi[/INST]",
                                       ReasoningFormat::kMistralThink));
}

TEST(ReasoningGrammar, KwargsThatTurnThinkingOff) {
  EXPECT_TRUE(kwargs_turn_thinking_off(json{{"enable_thinking", false}}));
  EXPECT_TRUE(kwargs_turn_thinking_off(json{{"thinking", false}}));
  EXPECT_TRUE(kwargs_turn_thinking_off(json{{"reasoning_effort", "none"}}));
  EXPECT_FALSE(kwargs_turn_thinking_off(json{{"enable_thinking", true}}));
  EXPECT_FALSE(kwargs_turn_thinking_off(json{{"reasoning_effort", "low"}}));
  EXPECT_FALSE(kwargs_turn_thinking_off(json::object()));
  EXPECT_FALSE(kwargs_turn_thinking_off(json()));
}

// tool_choice required: thinking off (or a prompt that closed the block)
// leaves no room for a block before the call; otherwise one may come first.
TEST(ReasoningGrammar, RequiredCallFollowsTheRoom) {
  ToolRequest req;
  req.tools = json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {}}}}])");
  req.choice.kind = ToolChoice::Kind::kRequired;
  req.parallel_tool_calls = false;
  ReplyParserOptions o;
  o.format.tools = ToolCallFormat::kHermes;
  o.format.reasoning = ReasoningFormat::kThink;
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(matches(tool_call_grammar(req, o), "<think>hmm</think>\n\n" + call));
  EXPECT_TRUE(matches(tool_call_grammar(req, o), call));
  o.thinking_off = true;
  EXPECT_FALSE(matches(tool_call_grammar(req, o), "<think>hmm</think>\n\n" + call));
  EXPECT_FALSE(matches(tool_call_grammar(req, o), "<think>\n\n</think>\n\n" + call));
  EXPECT_TRUE(matches(tool_call_grammar(req, o), call));
}

}  // namespace
}  // namespace og
