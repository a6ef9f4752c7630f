// bench's speculative rows (bench_spec.h).
#include "bench_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "llm_common.h"
#include "runtime/run_setup.h"
#include "runtime/session.h"

namespace og::app {

namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

std::string read_prompt(const BenchSpecFlags& f) {
  if (f.prompt_file.empty()) return f.prompt;
  std::ifstream in(f.prompt_file, std::ios::binary);
  if (!in) fail("--spec-prompt-file: cannot read ", f.prompt_file);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Repetitions run every k in turn (k = 0, the decode step, first), so that a
// drift of the machine touches all of them alike; each k reports its best
// repetition (the least disturbed on a shared machine) and its mean.
nlohmann::json verify_rows(const BenchSpecFlags& f, const BenchSpecContext& ctx) {
  nlohmann::json rows = nlohmann::json::array();
  if (f.verify_k.empty()) return rows;
  const int64_t steps = std::max<int64_t>(ctx.n_gen, 1);
  std::vector<int64_t> ks = {0};
  for (int64_t k : f.verify_k)
    if (k > 0 && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  std::vector<std::vector<double>> ms(ks.size());
  for (int64_t k : ks) bench_verify_seconds(*ctx.model, ctx.cache, ctx.depth, std::min<int64_t>(steps, 2), k, ctx.seed);
  for (int64_t r = 0; r < ctx.repetitions && !interrupted(); ++r)
    for (size_t i = 0; i < ks.size() && !interrupted(); ++i)
      ms[i].push_back(1e3 * bench_verify_seconds(*ctx.model, ctx.cache, ctx.depth, steps, ks[i], ctx.seed + r) /
                      static_cast<double>(steps));
  if (ms[0].empty()) return rows;
  auto best = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); };
  const double one = best(ms[0]);
  if (!ctx.json) {
    std::printf("\nverify steps at depth %lld (%lld steps, best and mean of %zu repetitions): k draft tokens + the "
                "pending one in one forward\n\n| k | ms / step (best) | mean | × one decode step (best) |\n"
                "|---:|---:|---:|---:|\n",
                static_cast<long long>(ctx.depth), static_cast<long long>(steps), ms[0].size());
  }
  for (size_t i = 0; i < ks.size(); ++i) {
    if (ms[i].empty()) continue;
    const double b = best(ms[i]);
    rows.push_back({{"k", ks[i]}, {"ms_per_step", b}, {"ms_per_step_mean", mean(ms[i])}, {"vs_decode", b / one}});
    if (!ctx.json)
      std::printf("| %s | %.3f | %.3f | %.2f |\n", i == 0 ? "0 (decode)" : std::to_string(ks[i]).c_str(), b,
                  mean(ms[i]), b / one);
  }
  std::fflush(stdout);
  return rows;
}

struct GenRow {
  std::string mode;
  int64_t tokens = 0, drafts = 0, draft_tokens = 0, accepted = 0, forwards = 0;
  std::vector<double> tok_s;
};

nlohmann::json generation_rows(const BenchSpecFlags& f, const BenchSpecContext& ctx) {
  nlohmann::json rows = nlohmann::json::array();
  if (f.spec.spec == "none" && f.spec.model_draft.empty()) return rows;
  RunConfig rc;
  rc.model.model = ctx.model_path;
  rc.model.chat = "0";
  rc.cache.kind = "sequence";
  rc.cache.storage_dtype = kv_dtype_name(ctx.cache.dtype);
  rc.cache.prefill_chunk_size = ctx.cache.prefill_chunk;
  const std::string text = read_prompt(f);
  Run run = build_run(rc);
  const std::vector<int32_t> prompt = run.tokenizer().encode(text, true, false);
  OG_CHECK(!prompt.empty(), "--spec-prompt encodes to no tokens");
  rc.cache.max_capacity = static_cast<int64_t>(prompt.size()) + ctx.n_gen + 1;
  run = build_run(rc);
  const std::unique_ptr<SpecRun> spec = make_spec_run(f.spec, run);
  ModelEngine engine(run.model());
  std::vector<GenRow> out(2);
  out[0].mode = "plain";
  out[1].mode = f.spec.model_draft.empty() ? "spec ngram" : "spec draft";
  for (int mode = 0; mode < 2 && !interrupted(); ++mode) {
    GenRow& g = out[mode];
    for (int64_t r = -1; r < ctx.repetitions && !interrupted(); ++r) {  // r = -1: warm-up
      Session s(engine, run.make_cache(), run.tokenizer());
      Sampler sampler{SamplerConfig{}};
      GenerateOptions o;
      o.max_new_tokens = ctx.n_gen;
      if (mode == 1) o.spec = spec->options();
      const TurnResult res = s.generate(prompt, sampler, o, nullptr);
      if (r < 0) continue;
      const Stats& st = s.stats();
      g.tokens = static_cast<int64_t>(res.tokens.size());
      g.drafts = st.spec_drafts;
      g.draft_tokens = st.spec_draft_tokens;
      g.accepted = st.spec_accepted_tokens;
      g.forwards = st.decode_steps;
      g.tok_s.push_back(st.decode_tok_s());
    }
  }
  if (!ctx.json) {
    std::printf("\ngreedy generation of %lld tokens from a %zu-token prompt (decode tok/s: decode forwards and "
                "proposing)\n\n| mode | tokens | tok/s | acceptance | tokens / target forward |\n|---|---:|---:|---:|---:|\n",
                static_cast<long long>(ctx.n_gen), prompt.size());
  }
  for (const GenRow& g : out) {
    if (g.tok_s.empty()) continue;
    const double acc = g.draft_tokens > 0 ? double(g.accepted) / double(g.draft_tokens) : 0.0;
    const double per = g.forwards > 0 ? double(g.forwards + g.accepted) / double(g.forwards) : 0.0;
    rows.push_back({{"mode", g.mode}, {"tokens", g.tokens}, {"tok_s", mean(g.tok_s)}, {"drafts", g.drafts},
                    {"draft_tokens", g.draft_tokens}, {"accepted_tokens", g.accepted}, {"acceptance", acc},
                    {"tokens_per_target_forward", per}});
    if (!ctx.json)
      std::printf("| %s | %lld | %.2f | %s | %.2f |\n", g.mode.c_str(), static_cast<long long>(g.tokens),
                  mean(g.tok_s), g.draft_tokens > 0 ? cat(std::round(acc * 1000) / 10, " %").c_str() : "-", per);
  }
  std::fflush(stdout);
  return rows;
}

}  // namespace

void add_bench_spec_flags(Flags& fl, BenchSpecFlags& f) {
  fl.add_int_list("spec-verify", &f.verify_k, 0, 64,
                  "speculative verify rows: draft lengths k whose verify step (k + 1 rows in one forward) is timed "
                  "against one decode step, at the first -d and -n");
  add_spec_flags(fl, f.spec);
  fl.add_string("spec-prompt", &f.prompt,
                "with --spec / --model-draft: the prompt (raw text) of the greedy generations with and without "
                "speculation (-n tokens, the first -n)", "TEXT");
  fl.add_string("spec-prompt-file", &f.prompt_file, "the same, read from a file", "PATH");
}

bool check_bench_spec_flags(const Flags& fl, const BenchSpecFlags& f) {
  check_spec_flags(fl, f.spec);
  const bool gen = f.spec.spec != "none" || !f.spec.model_draft.empty();
  const bool has_prompt = fl.given("spec-prompt") || fl.given("spec-prompt-file");
  if (gen && !has_prompt) usage_fail("--spec / --model-draft in bench need --spec-prompt TEXT or --spec-prompt-file");
  if (has_prompt && !gen) usage_fail("--spec-prompt needs --spec ngram or --model-draft");
  if (fl.given("spec-prompt") && fl.given("spec-prompt-file"))
    usage_fail("--spec-prompt and --spec-prompt-file: give one");
  if (fl.given("spec-prompt-file")) check_path_exists(f.prompt_file, "--spec-prompt-file");
  return gen || !f.verify_k.empty();
}

nlohmann::json run_bench_spec(const BenchSpecFlags& f, const BenchSpecContext& ctx) {
  nlohmann::json j;
  j["verify"] = verify_rows(f, ctx);
  j["generation"] = generation_rows(f, ctx);
  return j;
}

}  // namespace og::app
