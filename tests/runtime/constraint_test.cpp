// Grammar-constrained generation on a random-weight model (whose free text is
// noise): every reply that is not cut by the token budget matches its grammar
// exactly, under greedy and sampled decoding, for plain grammars and JSON
// schemas; a completed grammar ends the turn on a stop id; the cheap check and
// the masked draw agree with the plain twin (every token tried on its own).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/json_validate.h"
#include "model/synth_fixture.h"
#include "runtime/constraint.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace og {
namespace {

using namespace og::test;

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const grammar::TokenVocab> vocab;
};

const Loaded& stories_model() {
  static const Loaded l = [] {
    Loaded x;
    x.model = Model::load(synth_gguf(synth::Family::kLlama));
    x.tok = Tokenizer::from_path(x.model->source_path());
    x.vocab = grammar_vocab(*x.tok);
    return x;
  }();
  return l;
}

struct Reply {
  TurnResult res;
  bool complete = false;
};

Reply generate(const Loaded& l, const std::string& grammar_text, uint64_t seed, int64_t max_new = 200) {
  ModelEngine engine(*l.model);
  KvPolicy p;
  p.max_capacity = 512;
  p.initial_capacity = 64;
  Session s(engine, make_kv_cache(KvKind::kSequence, l.model->kv_geometry(), p), *l.tok);
  SamplerConfig sc;
  if (seed > 0) {
    sc.temperature = 1.2;
    sc.seed = seed;
  }
  Sampler sampler(sc);
  GenerateOptions o;
  o.max_new_tokens = max_new;
  o.stop_ids = l.tok->special().stop_ids;
  o.grammar = {grammar::Grammar::parse(grammar_text), l.vocab};
  Reply r;
  r.res = s.generate(l.tok->encode("Once upon a time", true, false), sampler, o, nullptr);
  grammar::Matcher m(o.grammar.grammar);
  r.complete = m.accept_bytes(r.res.text) && m.is_complete();
  return r;
}

TEST(Constraint, PlainGrammarsHoldUnderGreedyAndSampling) {
  const Loaded& l = stories_model();
  ASSERT_FALSE(l.tok->special().stop_ids.empty());
  const char* grammars[] = {
      R"(root ::= "yes" | "no")",
      R"(root ::= "The answer is " [0-9]{1,3} ".")",
      R"(root ::= "[" ( [a-z]+ ( ", " [a-z]+ )* )? "]")",
  };
  int checked = 0;
  for (const char* g : grammars) {
    for (uint64_t seed : {0, 1, 2, 3, 4, 5}) {
      const Reply r = generate(l, g, seed);
      if (r.res.reason == StopReason::kMaxTokens) continue;  // cut: may be incomplete
      EXPECT_EQ(r.res.reason, StopReason::kStopToken) << g << " seed " << seed;
      EXPECT_TRUE(r.complete) << g << " seed " << seed << ": '" << r.res.text << "'";
      ++checked;
    }
  }
  EXPECT_GE(checked, 12);  // most replies finish: the grammar, not the budget, ends them
}

TEST(Constraint, JsonSchemaRepliesValidate) {
  const Loaded& l = stories_model();
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
                   "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
    "required": ["name", "age"], "additionalProperties": false})");
  grammar::JsonSchemaOptions o;
  o.max_whitespace = 2;
  const std::string g = grammar::json_schema_to_grammar(schema, o);
  int validated = 0;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    const Reply r = generate(l, g, seed, 300);
    if (r.res.reason == StopReason::kMaxTokens) continue;
    ASSERT_TRUE(r.complete) << "seed " << seed << ": '" << r.res.text << "'";
    const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(r.res.text, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.res.text;
    const grammar::ValidationResult v = grammar::validate_json(doc, schema);
    EXPECT_TRUE(v.valid) << r.res.text << ": " << v.error;
    ++validated;
  }
  EXPECT_GT(validated, 0);
}

// The cheap check of the sampled token and the full mask agree with trying
// every token on its own, at every step of a constrained reply.
TEST(Constraint, MaskMatchesThePlainTwinAlongAReply) {
  const Loaded& l = stories_model();
  const auto g = grammar::Grammar::parse(R"(root ::= "{\"a\": " [0-9]+ ", \"b\": \"" [a-z ]* "\"}")");
  const Reply r = generate(l, R"(root ::= "{\"a\": " [0-9]+ ", \"b\": \"" [a-z ]* "\"}")", 3, 40);
  grammar::Matcher m(g);
  for (int32_t id : r.res.tokens) {
    grammar::TokenMask fast, plain;
    m.fill_mask(*l.vocab, fast);
    grammar::fill_mask_plain(m, *l.vocab, plain);
    ASSERT_EQ(fast.bits, plain.bits);
    if (std::find(l.tok->special().stop_ids.begin(), l.tok->special().stop_ids.end(), id) !=
        l.tok->special().stop_ids.end())
      break;
    ASSERT_TRUE(m.accept_token(*l.vocab, id));
  }
}

}  // namespace
}  // namespace og
