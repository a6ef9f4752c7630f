// Speculative decoding on real (synthetic, random-weight) models: greedy
// output with speculation is token for token plain greedy output on every
// family, every one-session cache kind and every storage dtype, with rings
// from small window overrides, KV sharing (gemma4) and grammars; a draft model
// equal to the target is accepted in full, a draft that always disagrees
// changes nothing; long generations over small rings never recompute; the
// vocabulary check refuses a draft with another tokenizer. (Random weights'
// acceptance rates mean nothing about real text: these test exactness only.)
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model/synth_fixture.h"
#include "runtime/bench.h"
#include "runtime/constraint.h"
#include "runtime/session.h"
#include "runtime/spec/draft_model.h"
#include "runtime/spec/ngram.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

using namespace og::test;

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

const Loaded& load(synth::Family f) {
  static std::map<synth::Family, Loaded> cache;
  Loaded& l = cache[f];
  if (!l.model) {
    l.model = Model::load(synth_gguf(f));
    l.tok = Tokenizer::from_path(l.model->source_path());
  }
  return l;
}

struct SpecCache {
  KvKind kind = KvKind::kSequence;
  KvDType dtype = KvDType::F32;
  std::vector<int> windows;
  int64_t max_write = 16;
  int64_t capacity = 96;
};

std::unique_ptr<KvCache> make_cache(const Loaded& l, const SpecCache& s) {
  KvPolicy p;
  p.max_capacity = s.capacity;
  p.initial_capacity = 8;  // flat layers grow during the turn
  p.max_write = s.max_write;
  p.dtype = s.dtype;
  p.windows = s.windows;
  p.block_size = 4;
  return make_kv_cache(s.kind, l.model->kv_geometry(), p);
}

// A draft model whose every proposal is shifted by one id: never the target's token.
class ShiftedProposer : public SpecProposer {
 public:
  explicit ShiftedProposer(DraftModelProposer& inner, int32_t n_vocab) : inner_(inner), n_vocab_(n_vocab) {}
  Draft propose(std::span<const int32_t> history, int64_t max_tokens) override {
    Draft d = inner_.propose(history, max_tokens);
    for (int32_t& t : d.tokens) t = (t + 1) % n_vocab_;
    return d;
  }
  std::string name() const override { return "shifted"; }

 private:
  DraftModelProposer& inner_;
  int32_t n_vocab_;
};

enum class Prop { kNone, kNgram, kSame, kShifted };

struct Result {
  TurnResult r;
  Stats stats;
};

Result generate(const Loaded& l, const SpecCache& s, Prop prop, const std::vector<int32_t>& prompt, int64_t max_new,
                const GrammarConstraint& grammar = {}) {
  ModelEngine engine(*l.model);
  Session session(engine, make_cache(l, s), *l.tok);
  ModelEngine draft_engine(*l.model);
  DraftModelProposer same(draft_engine, make_cache(l, s), *l.tok, 0.0);
  ShiftedProposer shifted(same, l.model->n_vocab());
  NgramProposer ngram(3);
  Sampler sampler{SamplerConfig{}};
  GenerateOptions o;
  o.max_new_tokens = max_new;
  o.grammar = grammar;
  if (grammar.grammar) o.stop_ids = l.tok->special().stop_ids;
  o.spec.draft_max = 6;
  if (prop == Prop::kNgram) o.spec.proposer = &ngram;
  if (prop == Prop::kSame) o.spec.proposer = &same;
  if (prop == Prop::kShifted) o.spec.proposer = &shifted;
  Result res;
  res.r = session.generate(prompt, sampler, o, nullptr);
  res.stats = session.stats();
  EXPECT_EQ(session.cached(), session.position() - 1);
  return res;
}

// A prompt that repeats itself, so that prompt lookup finds matches.
std::vector<int32_t> prompt_of(const Loaded& l) {
  std::vector<int32_t> p = test_tokens(10, l.model->n_vocab(), 11);
  const std::vector<int32_t> again(p.begin() + 2, p.end());
  p.insert(p.end(), again.begin(), again.end());
  return p;
}

class SpecModel : public ::testing::TestWithParam<synth::Family> {};

TEST_P(SpecModel, GreedyEqualsPlainOnEveryKindDtypeAndRing) {
  const Loaded& l = load(GetParam());
  const std::vector<int32_t> prompt = prompt_of(l);
  std::vector<SpecCache> setups;
  for (KvKind kind : {KvKind::kSequence, KvKind::kReference, KvKind::kBatchedSequence, KvKind::kBatchedCell})
    for (KvDType dt : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) setups.push_back({kind, dt, {}});
  setups.push_back({KvKind::kSequence, KvDType::F32, {4}, 16});   // rings of window 4 (max_write narrowed to 4)
  setups.push_back({KvKind::kBatchedCell, KvDType::F16, {5}, 16});
  setups.push_back({KvKind::kSequence, KvDType::Q8_0, {0, 6}, 3});  // flat and ring caches, max_write 3
  for (const SpecCache& s : setups) {
    SCOPED_TRACE(testing::Message() << kv_kind_name(s.kind) << " " << kv_dtype_name(s.dtype) << " windows "
                                    << (s.windows.empty() ? -1 : s.windows.back()) << " max_write " << s.max_write);
    const Result plain = generate(l, s, Prop::kNone, prompt, 40);
    const Result ngram = generate(l, s, Prop::kNgram, prompt, 40);
    const Result same = generate(l, s, Prop::kSame, prompt, 40);
    const Result shifted = generate(l, s, Prop::kShifted, prompt, 40);
    EXPECT_EQ(ngram.r.tokens, plain.r.tokens);
    EXPECT_EQ(same.r.tokens, plain.r.tokens);
    EXPECT_EQ(shifted.r.tokens, plain.r.tokens);
    EXPECT_EQ(same.r.text, plain.r.text);
    // The same model as draft: every draft token accepted, in fewer target forwards.
    EXPECT_GT(same.stats.spec_draft_tokens, 0);
    EXPECT_EQ(same.stats.spec_accepted_tokens, same.stats.spec_draft_tokens);
    EXPECT_LT(same.stats.decode_steps, plain.stats.decode_steps);
    EXPECT_EQ(shifted.stats.spec_accepted_tokens, 0);
    EXPECT_GT(shifted.stats.spec_draft_tokens, 0);
    for (const Result* r : {&ngram, &same, &shifted}) EXPECT_EQ(r->stats.recomputed_tokens, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SpecModel,
                         ::testing::Values(synth::Family::kLlama, synth::Family::kQwen2, synth::Family::kQwen3,
                                           synth::Family::kMistral, synth::Family::kGemma3, synth::Family::kGemma4,
                                           synth::Family::kQwen3Moe, synth::Family::kMixtral, synth::Family::kPhi3,
                                           synth::Family::kGptOss),
                         [](const auto& info) {
                           std::string n = synth::family_name(info.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(SpecModelRing, LongGenerationOverSmallWindowsEqualsPlainWithoutRecomputation) {
  for (synth::Family f : {synth::Family::kLlama, synth::Family::kGemma3}) {
    const Loaded& l = load(f);
    const std::vector<int32_t> prompt = prompt_of(l);
    for (const SpecCache& s : {SpecCache{KvKind::kSequence, KvDType::F32, {4}, 4, 400},
                           SpecCache{KvKind::kBatchedCell, KvDType::BF16, {6}, 8, 400}}) {
      const Result plain = generate(l, s, Prop::kNone, prompt, 300);
      const Result same = generate(l, s, Prop::kSame, prompt, 300);
      const Result shifted = generate(l, s, Prop::kShifted, prompt, 300);
      EXPECT_EQ(same.r.tokens, plain.r.tokens) << synth::family_name(f);
      EXPECT_EQ(shifted.r.tokens, plain.r.tokens) << synth::family_name(f);
      EXPECT_EQ(same.stats.recomputed_tokens + shifted.stats.recomputed_tokens, 0);
      // Drafts are bounded by max_write - 1 so that a verify step fits the ring.
      EXPECT_LE(same.stats.spec_draft_tokens, (s.max_write - 1) * same.stats.spec_drafts);
      EXPECT_GT(same.stats.spec_accepted_tokens, 200);
    }
  }
}

TEST(SpecModelGrammar, GreedyUnderAGrammarEqualsPlain) {
  const Loaded& l = load(synth::Family::kLlama);
  const GrammarConstraint g{grammar::Grammar::parse(R"(root ::= "[" ( [a-z]+ ( ", " [a-z]+ )* )? "]")"),
                            grammar_vocab(*l.tok)};
  const std::vector<int32_t> prompt = prompt_of(l);
  const SpecCache s;
  const Result plain = generate(l, s, Prop::kNone, prompt, 30, g);
  for (Prop p : {Prop::kNgram, Prop::kSame, Prop::kShifted}) {
    const Result r = generate(l, s, p, prompt, 30, g);
    EXPECT_EQ(r.r.tokens, plain.r.tokens);
    EXPECT_EQ(r.r.text, plain.r.text);
    EXPECT_EQ(r.r.reason, plain.r.reason);
  }
}

TEST(SpecModelVocabulary, ADraftWithAnotherTokenizerIsRefused) {
  const Loaded& a = load(synth::Family::kLlama);
  const Loaded& b = load(synth::Family::kGemma4);  // its own tokenizer
  EXPECT_NO_THROW(check_same_vocabulary(*a.tok, *a.tok));
  try {
    check_same_vocabulary(*a.tok, *b.tok);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("speculative decoding needs the same tokenizer"), std::string::npos)
        << e.what();
  }
}

// Sampled turns on a real (tiny, random-weight) model keep the target's
// distribution: the first two tokens over 1,200 seeds with the model as its own
// greedy draft (q a point mass, so rejections happen whenever the sample is not
// the argmax) against plain sampling, by a two-sample chi-square at its 0.999
// quantile (Wilson-Hilferty).
TEST(SpecModelSampling, TwoTokenContinuationsKeepThePlainDistribution) {
  const Loaded& l = load(synth::Family::kLlama);
  const std::vector<int32_t> prompt = prompt_of(l);
  const SpecCache cs;
  const int n = 1200;
  auto counts = [&](bool spec) {
    std::map<std::pair<int32_t, int32_t>, int> c;
    ModelEngine engine(*l.model);
    ModelEngine draft_engine(*l.model);
    DraftModelProposer same(draft_engine, make_cache(l, cs), *l.tok, 0.0);
    for (int seed = 1; seed <= n; ++seed) {
      Session s(engine, make_cache(l, cs), *l.tok);
      SamplerConfig sc;
      sc.temperature = 1.0;
      sc.top_k = 3;
      sc.seed = static_cast<uint64_t>(seed);
      Sampler sampler(sc);
      GenerateOptions o;
      o.max_new_tokens = 3;
      if (spec) {
        o.spec.proposer = &same;
        o.spec.draft_max = 2;
      }
      const TurnResult r = s.generate(prompt, sampler, o, nullptr);
      ++c[{r.tokens[1], r.tokens[2]}];
    }
    return c;
  };
  const auto a = counts(false), b = counts(true);
  std::map<std::pair<int32_t, int32_t>, std::pair<int, int>> cells;
  for (const auto& [k, v] : a) cells[k].first = v;
  for (const auto& [k, v] : b) cells[k].second = v;
  double x = 0;
  int df = -1;
  for (const auto& [k, v] : cells) {
    const double tot = v.first + v.second;
    if (tot < 10) continue;
    x += (v.first - tot / 2) * (v.first - tot / 2) / (tot / 2) + (v.second - tot / 2) * (v.second - tot / 2) / (tot / 2);
    ++df;
  }
  ASSERT_GE(df, 3);
  const double q = 2.0 / (9.0 * df);
  EXPECT_LT(x, df * std::pow(1 - q + 3.09 * std::sqrt(q), 3)) << "df " << df;
}

// bench's verify rows: k + 1 rows a step then a rewind of k, over flat and
// ring layers (the step's rows are one write however small the chunk).
TEST(SpecModelBench, VerifyStepsRunOverFlatAndRingCaches) {
  for (synth::Family f : {synth::Family::kLlama, synth::Family::kMistral}) {
    const Loaded& l = load(f);
    BenchCacheOptions o;
    o.prefill_chunk = 2;
    for (int64_t k : {0, 1, 8}) EXPECT_GT(bench_verify_seconds(*l.model, o, 20, 30, k, 1), 0.0);
  }
}

}  // namespace
}  // namespace og
