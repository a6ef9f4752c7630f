// Flags, the built run and reports shared by `offgraph run`, `chat` and `batch`.
#include "llm_common.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "format/gguf.h"
#include "grammar/json_schema.h"
#include "model/config.h"
#include "runtime/run_builder.h"
#include "runtime/vision_model.h"

namespace og::app {

namespace {


double mib(int64_t bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

void add_llm_flags(Flags& fl, LlmFlags& f, bool run, bool batch) {
  add_model_flag(fl, &f.run.model.model);
  add_tokenizer_flag(fl, &f.run.model.tokenizer);
  add_mmproj_flag(fl, &f.run.model.mmproj);
  add_no_mmproj_flag(fl, &f.run.model.no_mmproj);
  if (run) {
    fl.add_string("prompt", &f.prompt, "the prompt (required unless --interactive); not echoed to stdout");
    fl.add_short('p', "prompt");
    fl.add_bool("interactive", &f.interactive, "multi-turn chat on stdin, as `offgraph chat`");
    fl.add_short('i', "interactive");
  }
  fl.add_string("system", &f.system, "system message (chat templates that have one)");
  add_chat_flag(fl, f.run.model, "chat template");
  add_render_limit_flags(fl, f.render_limits);
  add_sampling_flags(fl, f.sampling, "", "sampling seed; the same seed gives the same output; -1 = random");
  // Bound checked by check_sampling_bounds() (runtime/generation_limits.h).
  fl.add_int("max-new-tokens", &f.max_new_tokens, std::numeric_limits<int64_t>::min(),
             std::numeric_limits<int64_t>::max(),
             run ? "tokens to generate (the prompt excluded), in [0, 2^31 - 1]"
                 : batch ? "tokens to generate per prompt, in [0, 2^31 - 1] (a JSON line may set its own)"
                         : "tokens to generate per turn, in [0, 2^31 - 1]");
  fl.add_short('n', "max-new-tokens");
  fl.add_alias("--n-predict", "max-new-tokens");
  fl.add_repeated("stop", &f.stop, "stop when the generated text contains this string (not printed)");
  fl.add_bool("ignore-eos", &f.ignore_eos,
              "do not stop at the model's end-of-text or end-of-turn tokens: only --max-new-tokens and --stop end "
              "a reply (a fixed-length generation, as llama.cpp's --ignore-eos)");
  fl.add_string("json-schema", &f.json_schema,
                "constrain every reply to JSON valid for this schema (a file, or the JSON text itself)", "FILE|JSON");
  fl.add_alias("-j", "json-schema");  // llama.cpp's short spelling
  fl.add_string("grammar", &f.grammar, "constrain every reply to this GBNF grammar file", "FILE");
  fl.add_alias("--grammar-file", "grammar");  // llama.cpp's name for a grammar given as a file
  add_cache_flags(fl, f.run.cache, batch ? CacheScope::kShared : CacheScope::kOneSession);
  add_threads_flag(fl, &f.run.threads);
  add_mmap_flag(fl, &f.run.model.mmap, &f.run.model.experts_in_memory);
  if (run) fl.add_bool("warmup", &f.warmup, "one unmeasured run first (not with --interactive)");
  fl.add_choice("stats", &f.stats, {"text", "json"},
                "report format: text lines on stderr, or one JSON object as the last line of stdout (only in "
                "--stats-file when that is given; stderr then carries no diagnostics unless --verbose)");
  fl.add_string("stats-file", &f.stats_file, "also write the report as one JSON object to this file", "PATH");
}

void check_llm_flags(const Flags& fl, const LlmFlags& f, bool run) {
  check_run_flags(fl, f.run);
  apply_render_limit_flags(f.render_limits);
  if (run && !f.interactive && !fl.given("prompt")) usage_fail("--prompt is required (or use --interactive)");
  if (run && f.interactive && fl.given("prompt"))
    usage_fail("--prompt cannot be combined with --interactive (type the turns on stdin)");
  if (run && f.interactive && f.warmup) usage_fail("--warmup cannot be combined with --interactive");
  check_sampling_bounds(f.sampling, f.max_new_tokens, f.stop);
  check_sampling_flags(fl, f.sampling);
  if (fl.given("json-schema") && fl.given("grammar"))
    usage_fail("--json-schema and --grammar both constrain the reply: give one");
  if (fl.given("json-schema") && f.json_schema.empty()) usage_fail("--json-schema is empty");
  if (fl.given("grammar") && f.grammar.empty()) usage_fail("--grammar is empty");
  set_machine_output(f.stats == "json");
}

Run build_llm_run(const RunConfig& c) {
  Run r = build_run(c);
  if (!r.warning.empty()) warn(r.warning);
  if (r.loaded.vision)  // which tower --image / /image parts go through
    diag("[vision] %s (from %s)\n", r.loaded.vision->describe().c_str(), r.loaded.vision->path.c_str());
  return r;
}

SamplerConfig sampler_config_of(const SamplingFlags& f) {
  SamplerConfig c;
  c.temperature = f.temperature;
  c.top_k = static_cast<int>(std::max<int64_t>(f.top_k, 0));  // -1 = off, as 0
  c.top_p = f.top_p;
  c.min_p = f.min_p;
  c.repeat_penalty = f.repeat_penalty;
  c.repeat_last_n = static_cast<int>(f.repeat_last_n);
  c.presence_penalty = f.presence_penalty;
  c.frequency_penalty = f.frequency_penalty;
  c.seed = resolve_seed(f.seed);
  return c;
}

GrammarConstraint structured_output_of(const LlmFlags& f, const Tokenizer& tok) {
  GrammarConstraint c;
  if (f.json_schema.empty() && f.grammar.empty()) return c;
  if (!f.grammar.empty()) {
    check_path_exists(f.grammar, "--grammar");
    const std::string text = read_text_file(f.grammar);
    try {
      c.grammar = grammar::Grammar::parse(text);
    } catch (const Error& e) {
      fail(f.grammar, ": ", e.what(), " (--grammar)");
    }
  } else {
    const size_t first = f.json_schema.find_first_not_of(" \t\r\n");
    const bool inline_json = first != std::string::npos && f.json_schema[first] == '{';
    const std::string where = inline_json ? "--json-schema" : f.json_schema;
    if (!inline_json) check_path_exists(f.json_schema, "--json-schema");
    const std::string json_text = inline_json ? f.json_schema : read_text_file(f.json_schema);
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(json_text, nullptr, false);
    if (schema.is_discarded()) fail(where, ": not valid JSON (--json-schema)");
    try {
      c.grammar = grammar::Grammar::parse(grammar::json_schema_to_grammar(schema));
    } catch (const Error& e) {
      fail(where, ": ", e.what(), " (--json-schema)");
    }
  }
  c.vocab = grammar_vocab(tok);
  return c;
}

GenerateOptions generate_options_of(const LlmFlags& f, const LoadedModel& l) {
  GenerateOptions o;
  o.max_new_tokens = f.max_new_tokens;
  if (!f.ignore_eos) o.stop_ids = l.stop_ids;
  o.stop_strings = f.stop;
  o.interrupt = &interrupted();
  o.grammar = structured_output_of(f, *l.tok);
  return o;
}

ModelChat chat_setup_of(const LoadedModel& l) {
  ChatSetupOptions o;
  o.renderer = "this run";
  o.jinja_hint = "give one with --chat-template-file, or --chat auto on a model that ships one";
  ModelChat c = model_chat_of(l, std::move(o));
  if (!c.warning.empty()) diag("[warning] %s\n", c.warning.c_str());
  return c;
}

void print_cache_describe(const KvCache& cache) {
  diag("%s\n", cache.describe().c_str());
}

void print_fill(const char* when, const Session& s) {
  const KvMemory m = s.cache().memory();
  diag("[cache] %s: %lld/%lld positions, %.2f MiB allocated, %.2f MiB used (flat %.2f/%.2f, ring %.2f/%.2f)\n",
               when, static_cast<long long>(s.cached()), static_cast<long long>(s.capacity()), mib(m.allocated()),
               mib(m.used()), mib(m.flat_allocated), mib(m.flat_used), mib(m.ring_allocated), mib(m.ring_used));
  diag("[mem] %s: rss %.1f MiB, peak rss %.1f MiB\n", when, mib(current_rss_bytes()),
               mib(peak_rss_bytes()));
}

std::string report_json(const Session& s, const char* stop_reason) {
  const Stats& st = s.stats();
  nlohmann::json j;
  j["prompt_tokens"] = st.prompt_tokens;
  j["generated_tokens"] = st.generated_tokens;
  j["load_ms"] = st.load_s * 1e3;
  j["ttft_ms"] = st.ttft_s * 1e3;
  j["prefill_ms"] = st.prefill_s * 1e3;
  j["prefill_tok_s"] = st.prefill_tok_s();
  j["decode_ms"] = st.decode_s * 1e3;
  j["decode_tok_s"] = st.decode_tok_s();
  j["sampling_ms"] = st.sampling_s * 1e3;
  j["recomputed_tokens"] = st.recomputed_tokens;
  if (st.spec_drafts > 0) {  // speculative decoding ran (docs/speculative.md)
    j["spec"] = {{"drafts", st.spec_drafts},
                 {"draft_tokens", st.spec_draft_tokens},
                 {"accepted_tokens", st.spec_accepted_tokens},
                 {"acceptance", st.spec_acceptance()},
                 {"tokens_per_target_forward",
                  st.decode_steps > 0 ? double(st.decode_steps + st.spec_accepted_tokens) / double(st.decode_steps) : 0.0},
                 {"propose_ms", st.spec_propose_s * 1e3}};
  }
  j["peak_rss_bytes"] = peak_rss_bytes();
  j["cache_positions"] = s.cached();
  j["cache_capacity"] = s.capacity();
  j["cache_bytes_allocated"] = s.cache().memory().allocated();
  if (stop_reason) j["stop_reason"] = stop_reason;
  j["warnings"] = warnings();
  return j.dump();
}

namespace {

void print_report_text(const Session& s, const char* stop_reason) {
  const Stats& st = s.stats();
  std::fprintf(stderr, "[stats] prompt tokens: %lld, generated tokens: %lld%s%s\n",
               static_cast<long long>(st.prompt_tokens), static_cast<long long>(st.generated_tokens),
               stop_reason ? ", stopped by: " : "", stop_reason ? stop_reason : "");
  std::fprintf(stderr, "[stats] load: %.1f ms, time to first token: %.1f ms, sampling: %.1f ms\n", st.load_s * 1e3,
               st.ttft_s * 1e3, st.sampling_s * 1e3);
  std::fprintf(stderr, "[stats] prefill: %.1f tok/s (%.1f ms), decode: %.1f tok/s (%.1f ms)\n", st.prefill_tok_s(),
               st.prefill_s * 1e3, st.decode_tok_s(), st.decode_s * 1e3);
  std::fprintf(stderr, "[stats] peak rss: %.1f MiB\n", mib(peak_rss_bytes()));
}

}  // namespace

void write_stdout_line(const std::string& line) {
  if (std::fprintf(stdout, "%s\n", line.c_str()) < 0 || std::fflush(stdout) != 0)
    fail("cannot write the output to stdout: ", std::strerror(errno));
}

void print_report(const LlmFlags& f, const Session& s, const char* stop_reason) {
  if (!f.stats_file.empty()) {
    std::FILE* out = std::fopen(f.stats_file.c_str(), "w");
    if (!out) fail(f.stats_file, ": cannot write the report (--stats-file): ", std::strerror(errno));
    const std::string j = report_json(s, stop_reason) + "\n";
    const bool ok = std::fwrite(j.data(), 1, j.size(), out) == j.size();
    if (std::fclose(out) != 0 || !ok)
      fail(f.stats_file, ": cannot write the report (--stats-file): ", std::strerror(errno));
  }
  if (f.stats == "json") {
    if (f.stats_file.empty()) write_stdout_line(report_json(s, stop_reason));
    return;
  }
  if (diagnostics_on()) print_report_text(s, stop_reason);
}

void print_report_asked(const LlmFlags& f, const Session& s, const char* stop_reason) {
  if (f.stats == "json") std::fprintf(stderr, "%s\n", report_json(s, stop_reason).c_str());
  else print_report_text(s, stop_reason);
}

namespace {
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) {
  g_stop_signal.store(sig);
  // A second signal before the first was handled: end as the signal would.
  if (g_interrupted.exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}
}  // namespace

void install_interrupt_handler(bool restart_reads) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart_reads ? SA_RESTART : 0;
  // Installed whatever the inherited disposition: a job started in the
  // background by a shell (SIGINT ignored) must still stop on SIGINT.
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop_signal.load(); }

int interrupted_exit_code() { return 128 + (g_stop_signal.load() ? g_stop_signal.load() : SIGINT); }

std::atomic<bool>& interrupted() { return g_interrupted; }

}  // namespace og::app
