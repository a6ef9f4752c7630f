// Images through the scheduler (docs/vision.md, "Images through the
// scheduler") on a synthetic Gemma 3 (bidirectional image spans) with
// precomputed image rows: batched greedy tokens equal each request alone
// through a Session (append_image, then generate); the same image hits the
// prefix cache and another image misses, also in the KV events' block
// hashes; a request of n choices shares its prompt with images; a request
// cancelled during its image prefill frees its cache; an image longer than
// the step's token budget is forwarded whole; speculation never proposes an
// image's placeholder; bad image requests are refused with a reason; the
// disk tier keeps an image's blocks by its hash across a restart.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "model/config.h"
#include "model/synth_fixture.h"
#include "runtime/image_input.h"
#include "runtime/scheduler.h"
#include "runtime/scheduler_images.h"
#include "temp_dir.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

using namespace og::test;

constexpr int64_t kSessionTokens = 64;
constexpr int64_t kMaxWrite = 16;
constexpr int32_t kPlaceholder = 3;
constexpr int64_t kImageRows = 9;

struct Loaded {
  Loaded() : model(Model::load(synth_gguf(synth::Family::kGemma3))), tok(Tokenizer::from_path(model->source_path())) {}
  int64_t width() const { return model->config().d_model; }
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

const Loaded& loaded() {
  static const Loaded l;
  return l;
}

// Rows of a made-up image: deterministic values in [-1, 1) from `seed`, named by a hash of the seed.
std::shared_ptr<const TowerImage> image_of(int seed, int64_t rows = kImageRows) {
  auto im = std::make_shared<TowerImage>();
  im->width = loaded().width();
  uint32_t x = 2654435761u * static_cast<uint32_t>(seed + 1);
  for (int64_t i = 0; i < rows * im->width; ++i) {
    x = x * 1664525u + 1013904223u;
    im->rows.push_back(static_cast<float>(x >> 8) / 8388608.0f - 1.0f);
  }
  im->hash = Sha256::of(std::string_view("image " + std::to_string(seed) + " rows " + std::to_string(rows)));
  return im;
}

// A prompt of pieces: text tokens, and images (placeholders) at their places.
struct Prompt {
  std::vector<int32_t> tokens;
  std::vector<RequestImage> images;
  Prompt& text(int n, uint32_t seed) {
    const std::vector<int32_t> t = test_tokens(n, loaded().model->n_vocab(), seed);
    for (int32_t id : t) tokens.push_back(id == kPlaceholder ? kPlaceholder + 1 : id);
    return *this;
  }
  Prompt& image(std::shared_ptr<const TowerImage> im) {
    RequestImage r;
    r.begin = static_cast<int64_t>(tokens.size());
    r.placeholder = kPlaceholder;
    r.bidirectional = true;  // Gemma 3's image tokens
    tokens.insert(tokens.end(), static_cast<size_t>(im->n_rows()), kPlaceholder);
    r.image = std::move(im);
    images.push_back(std::move(r));
    return *this;
  }
};

KvPolicy policy(int sequences) {
  KvPolicy p;
  p.max_capacity = kSessionTokens;
  p.initial_capacity = 8;
  p.max_write = kMaxWrite;
  p.max_sequences = sequences;
  p.block_size = 4;
  return p;
}

// The request alone through one session, as run does: text and images pending, then the turn.
std::vector<int32_t> alone(const Prompt& p, int64_t max_new) {
  const Loaded& l = loaded();
  ModelEngine engine(*l.model);
  Session s(engine, make_kv_cache(KvKind::kSequence, l.model->kv_geometry(), policy(1)), *l.tok);
  int64_t at = 0;
  for (const RequestImage& im : p.images) {
    s.append_pending(std::span(p.tokens).subspan(at, im.begin - at));
    s.append_image(im.image->rows, im.image->width, im.image->hash, im.placeholder, im.bidirectional);
    at = im.begin + im.image->n_rows();
  }
  Sampler sampler(SamplerConfig{});
  GenerateOptions o;
  o.max_new_tokens = max_new;
  return s.generate(std::span(p.tokens).subspan(at), sampler, o, nullptr).tokens;
}

struct Batched {
  explicit Batched(SchedulerOptions o, KvKind kind = KvKind::kBatchedCell) : engine(*loaded().model) {
    o.max_session_tokens = kSessionTokens;
    o.image_width = loaded().width();
    o.kv_events = [this](std::vector<KvEvent>&& ev) { events.insert(events.end(), ev.begin(), ev.end()); };
    auto c = make_kv_cache(kind, loaded().model->kv_geometry(), policy(o.max_decode_sequences + o.prefix_cache_entries));
    cache = c.get();
    sched = std::make_unique<Scheduler>(engine, *loaded().tok, std::move(c), o);
  }
  uint64_t submit(const Prompt& p, int64_t max_new, int n = 1, bool prompt_logprobs = false) {
    RequestOptions r;
    r.prompt = p.tokens;
    r.images = p.images;
    r.max_new_tokens = max_new;
    r.prompt_logprobs = prompt_logprobs;
    std::vector<RequestCallbacks> cbs(static_cast<size_t>(n));
    for (auto& cb : cbs) cb.on_finish = [this](const RequestReport& rep) { reports[{rep.id, rep.choice}] = rep; };
    return sched->submit_group(std::move(r), std::move(cbs));
  }
  const RequestReport& report(uint64_t id, int choice = 0) const { return reports.at({id, choice}); }
  // The hashes of the blocks stored since the last call.
  std::vector<BlockHash> stored() {
    std::vector<BlockHash> out;
    for (const KvEvent& e : events)
      if (e.type == KvEvent::Type::kBlockStored) out.insert(out.end(), e.hashes.begin(), e.hashes.end());
    events.clear();
    return out;
  }
  // Declared before the scheduler, which reports to them until it is gone.
  std::map<std::pair<uint64_t, int>, RequestReport> reports;
  std::vector<KvEvent> events;
  ModelEngine engine;
  KvCache* cache = nullptr;
  std::unique_ptr<Scheduler> sched;
};

SchedulerOptions sopts(int max_decode, int64_t step_tokens, int prefix_entries = 0, int prefills_per_step = 0) {
  SchedulerOptions o;
  o.max_decode_sequences = max_decode;
  o.step_tokens = step_tokens;
  o.prefix_cache_entries = prefix_entries;
  o.max_prefills_per_step = prefills_per_step;
  o.prefix_block_size = 4;
  return o;
}

std::vector<Prompt> image_prompts() {
  std::vector<Prompt> ps(5);
  ps[0].text(3, 1).image(image_of(1)).text(4, 2);
  ps[1].text(5, 3).image(image_of(2)).text(2, 4);
  ps[2].text(7, 5);  // text only, batched beside the images
  ps[3].image(image_of(1)).text(3, 6);  // the image first
  ps[4].text(2, 7).image(image_of(3, 4)).text(1, 8).image(image_of(4, 6)).text(3, 9);  // two images
  return ps;
}

TEST(SchedulerImage, BatchedGreedyEqualsEachRequestAlone) {
  const std::vector<Prompt> ps = image_prompts();
  std::vector<std::vector<int32_t>> want;
  for (const Prompt& p : ps) want.push_back(alone(p, 8));
  ASSERT_NE(want[0], alone(Prompt().text(3, 1).image(image_of(9)).text(4, 2), 8));  // the image matters
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell})
    // (max_decode, step_tokens, prefills per step): step_tokens 5 and 3 are shorter than an image.
    for (auto [max_decode, step_tokens, prefills] :
         {std::tuple{2, 5, 0}, std::tuple{5, 64, 0}, std::tuple{3, 3, 0}, std::tuple{5, 64, 1}, std::tuple{4, 12, 2}}) {
      Batched b(sopts(max_decode, step_tokens, 0, prefills), kind);
      std::vector<uint64_t> ids;
      for (const Prompt& p : ps) ids.push_back(b.submit(p, 8));
      b.sched->run_until_idle();
      for (size_t i = 0; i < ps.size(); ++i) {
        const RequestReport& r = b.report(ids[i]);
        EXPECT_EQ(r.reason, FinishReason::kLength) << r.message;
        EXPECT_EQ(r.tokens, want[i]) << kv_kind_name(kind) << " max_decode " << max_decode << " step_tokens "
                                     << step_tokens << " prefills " << prefills << " prompt " << i;
        EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(ps[i].tokens.size()));
      }
      EXPECT_EQ(b.cache->memory().used(), 0);
    }
}

TEST(SchedulerImage, TheSameImageHitsThePrefixCacheAndAnotherMisses) {
  Prompt a, same, other;
  a.text(3, 1).image(image_of(1)).text(6, 2);
  same.text(3, 1).image(image_of(1)).text(6, 2);
  other.text(3, 1).image(image_of(2)).text(6, 2);  // the same ids (placeholders), another image
  ASSERT_EQ(other.tokens, a.tokens);
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    Batched b(sopts(2, 16, 4), kind);
    const uint64_t ia = b.submit(a, 6);
    b.sched->run_until_idle();
    const std::vector<BlockHash> blocks_a = b.stored();
    const uint64_t is = b.submit(same, 6);
    b.sched->run_until_idle();
    b.stored();
    const uint64_t io = b.submit(other, 6);
    b.sched->run_until_idle();
    const std::vector<BlockHash> blocks_o = b.stored();
    EXPECT_EQ(b.report(ia).cached_tokens, 0);
    EXPECT_EQ(b.report(is).cached_tokens, static_cast<int64_t>(a.tokens.size()) - 1) << kv_kind_name(kind);
    EXPECT_EQ(b.report(is).tokens, b.report(ia).tokens);
    // Another image shares only the text before it (3 tokens, less than a block), never the image.
    EXPECT_LE(b.report(io).cached_tokens, 3) << kv_kind_name(kind);
    EXPECT_EQ(b.report(ia).tokens, alone(a, 6));
    EXPECT_EQ(b.report(io).tokens, alone(other, 6));
    const SchedulerSnapshot s = b.sched->snapshot();
    EXPECT_EQ(s.prefix_lookups, 3);
    // The KV events: the other image's blocks are new blocks, none of a's (every block overlaps or follows the image).
    ASSERT_FALSE(blocks_a.empty());
    ASSERT_FALSE(blocks_o.empty());
    for (const BlockHash& h : blocks_o)
      EXPECT_EQ(std::find(blocks_a.begin(), blocks_a.end(), h), blocks_a.end()) << kv_kind_name(kind);
  }
}

TEST(SchedulerImage, ChoicesShareThePromptWithImages) {
  Prompt p;
  p.text(4, 11).image(image_of(5)).text(3, 12);
  const int64_t n_prompt = static_cast<int64_t>(p.tokens.size());
  const std::vector<int32_t> want = alone(p, 8);
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    Batched b(sopts(3, 16, 2), kind);
    const uint64_t g = b.submit(p, 8, 3);
    b.sched->run_until_idle();
    EXPECT_EQ(b.sched->snapshot().prompt_tokens, n_prompt) << kv_kind_name(kind);  // forwarded once
    for (int i = 0; i < 3; ++i) EXPECT_EQ(b.report(g, i).tokens, want) << kv_kind_name(kind) << " choice " << i;
    // Again: the choices start from the cached prompt, image included.
    const uint64_t again = b.submit(p, 8, 2);
    b.sched->run_until_idle();
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(b.report(again, i).tokens, want);
      EXPECT_EQ(b.report(again, i).cached_tokens, n_prompt - 1);
    }
  }
}

TEST(SchedulerImage, CancelDuringTheImagePrefillFreesTheCache) {
  Prompt p, q;
  p.text(3, 21).image(image_of(6)).text(20, 22);
  q.text(2, 23).image(image_of(7)).text(2, 24);
  Batched b(sopts(2, 5, 2));
  const uint64_t id = b.submit(p, 8);
  b.sched->step();  // the 3 text tokens (the chunk stops before the image)
  b.sched->step();  // the image, whole (9 rows over a budget of 5)
  EXPECT_EQ(b.cache->length(1), 3 + kImageRows);
  b.sched->cancel(id);
  const uint64_t next = b.submit(q, 6);
  b.sched->run_until_idle();
  EXPECT_EQ(b.report(id).reason, FinishReason::kCancelled);
  EXPECT_TRUE(b.report(id).tokens.empty());
  EXPECT_EQ(b.report(next).tokens, alone(q, 6));
  EXPECT_EQ(b.cache->memory().used() > 0, b.sched->snapshot().prefix_entries > 0);  // only entries hold blocks
  EXPECT_EQ(b.sched->snapshot().running, 0);
}

TEST(SchedulerImage, SpeculationNeverProposesAnImagesPlaceholder) {
  Draft d;
  d.tokens = {7, 8, kPlaceholder, 9};
  d.q = {{}, {}, {}, {}};
  RequestOptions r;
  r.images.push_back(RequestImage{0, image_of(1), kPlaceholder, true});
  sched_images::cut_draft(d, r);
  EXPECT_EQ(d.tokens, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(d.q.size(), 2u);
  // Prompt lookup over a prompt whose text repeats around an image: the greedy tokens are plain decoding's.
  Prompt p;
  p.text(6, 31).image(image_of(8)).text(6, 31).text(6, 31);
  SchedulerOptions o = sopts(2, 32);
  o.spec.ngram = true;
  o.spec.draft_max = 4;
  Batched b(o);
  const uint64_t id = b.submit(p, 12);
  b.sched->run_until_idle();
  EXPECT_EQ(b.report(id).tokens, alone(p, 12));
}

TEST(SchedulerImage, BadImageRequestsAreRefusedWithAReason) {
  Batched b(sopts(2, 16));
  auto refused = [&b](const Prompt& p, bool prompt_logprobs = false) {
    const uint64_t id = b.submit(p, 4, 1, prompt_logprobs);
    b.sched->run_until_idle();
    EXPECT_EQ(b.report(id).reason, FinishReason::kRefused);
    return b.report(id).message;
  };
  Prompt ok;
  ok.text(2, 1).image(image_of(1)).text(2, 2);
  Prompt wrong = ok;
  wrong.tokens[3] = kPlaceholder + 1;
  EXPECT_NE(refused(wrong).find("not its placeholder"), std::string::npos);
  Prompt narrow = ok;
  auto rows = std::make_shared<TowerImage>(*ok.images[0].image);
  rows->width = loaded().width() / 2;
  rows->rows.resize(static_cast<size_t>(kImageRows * rows->width));
  narrow.images[0].image = rows;
  EXPECT_NE(refused(narrow).find("wide"), std::string::npos);
  Prompt past = ok;
  past.images[0].begin = static_cast<int64_t>(ok.tokens.size()) - 2;
  EXPECT_NE(refused(past).find("not inside the prompt"), std::string::npos);
  Prompt twice = ok;
  twice.images.push_back(twice.images[0]);
  EXPECT_NE(refused(twice).find("overlaps"), std::string::npos);
  Prompt huge;
  huge.text(1, 1).image(image_of(2, kMaxWrite + 1));
  EXPECT_NE(refused(huge).find("max_write"), std::string::npos);
  EXPECT_NE(refused(ok, /*prompt_logprobs=*/true).find("prompt logprobs"), std::string::npos);
  Prompt none = ok;
  none.images[0].image = nullptr;
  EXPECT_NE(refused(none).find("no rows"), std::string::npos);
  // And the good one runs.
  const uint64_t id = b.submit(ok, 4);
  b.sched->run_until_idle();
  EXPECT_EQ(b.report(id).tokens, alone(ok, 4));
}

// The disk tier on a synthetic Llama (flat layers; causal image rows): a
// prompt with an image evicted to disk is read back by a restarted scheduler
// with its image, and the same ids with another image find none of its blocks.
TEST(SchedulerImage, TheDiskTierKeysBlocksByTheImage) {
  const std::unique_ptr<Model> model = Model::load(synth_gguf(synth::Family::kLlama));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_path(model->source_path());
  const int64_t width = model->config().d_model;
  auto rows_of = [width](int seed) {
    auto im = std::make_shared<TowerImage>();
    im->width = width;
    for (int64_t i = 0; i < 8 * width; ++i) im->rows.push_back(static_cast<float>((i * 7 + seed * 13) % 19) / 19.0f - 0.5f);
    im->hash = Sha256::of(std::string_view("llama image " + std::to_string(seed)));
    return std::shared_ptr<const TowerImage>(im);
  };
  auto prompt_with = [&](int seed) {
    RequestOptions r;
    r.prompt = test_tokens(5, model->n_vocab(), 61);
    r.images.push_back(RequestImage{5, rows_of(seed), kPlaceholder, false});
    r.prompt.insert(r.prompt.end(), 8, kPlaceholder);
    const std::vector<int32_t> tail = test_tokens(11, model->n_vocab(), 62);
    r.prompt.insert(r.prompt.end(), tail.begin(), tail.end());
    r.max_new_tokens = 6;
    return r;
  };
  auto run = [&](const std::string& dir, const std::vector<RequestOptions>& reqs) {
    ModelEngine engine(*model);
    SchedulerOptions o = sopts(1, 16, 1);
    o.max_session_tokens = kSessionTokens;
    o.image_width = width;
    o.prefix_disk.dir = dir;
    o.prefix_disk.max_bytes = int64_t{1} << 26;
    Scheduler sched(engine, *tok, make_kv_cache(KvKind::kBatchedCell, model->kv_geometry(), policy(2)), o);
    std::vector<RequestReport> out;
    for (const RequestOptions& r : reqs) {
      RequestCallbacks cb;
      cb.on_finish = [&out](const RequestReport& rep) { out.push_back(rep); };
      sched.submit(r, std::move(cb));
      sched.run_until_idle();
    }
    return std::make_pair(out, sched.snapshot());
  };
  TempDir dir;
  RequestOptions other_text;
  other_text.prompt = test_tokens(9, model->n_vocab(), 63);
  other_text.max_new_tokens = 6;
  const auto first = run(dir.path(), {prompt_with(1), other_text});  // the second evicts the first to disk
  ASSERT_EQ(first.first.size(), 2u);
  EXPECT_GT(first.second.prefix_disk_writes, 0);
  const auto again = run(dir.path(), {prompt_with(1), prompt_with(2)});
  ASSERT_EQ(again.first.size(), 2u);
  EXPECT_EQ(again.first[0].tokens, first.first[0].tokens);
  EXPECT_GE(again.first[0].cached_tokens, 16);  // past the image (positions 5..12), from disk
  EXPECT_EQ(again.second.prefix_disk_hits, 1);
  EXPECT_LE(again.first[1].cached_tokens, 5);  // another image: at most the text before it
}

}  // namespace
}  // namespace og
