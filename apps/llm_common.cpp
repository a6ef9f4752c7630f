// Flags, loading and reports shared by `offgraph run` and `offgraph chat`.
#include "llm_common.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/thread_pool.h"
#include "base/timer.h"
#include "format/gguf.h"
#include "model/config.h"

namespace og::app {

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

double mib(int64_t bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

void add_sampling_flags(Flags& fl, LlmFlags& f, const std::string& prefix, double max_temperature) {
  fl.add_float("temperature", &f.temperature, 0, max_temperature, prefix + "sampling temperature; 0 = greedy");
  fl.add_int("top-k", &f.top_k, 0, kIntMax, prefix + "keep the k most likely tokens; 0 = off");
  fl.add_float("top-p", &f.top_p, 0, 1, prefix + "keep the smallest set with this probability mass; 1 = off", true);
  fl.add_float("min-p", &f.min_p, 0, 1, prefix + "drop tokens below min-p times the top probability; 0 = off");
  fl.add_float("repeat-penalty", &f.repeat_penalty, 0, 100, prefix + "penalty on recently seen tokens; 1 = off", true);
  fl.add_int("repeat-last-n", &f.repeat_last_n, 0, kIntMax, prefix + "how many recent tokens the penalty looks at");
  fl.add_float("presence-penalty", &f.presence_penalty, -2, 2,
               prefix + "penalty subtracted once from each token already generated this turn; 0 = off");
  fl.add_float("frequency-penalty", &f.frequency_penalty, -2, 2,
               prefix + "penalty subtracted per earlier generation of a token this turn; 0 = off");
}

void add_llm_flags(Flags& fl, LlmFlags& f, bool run, bool batch) {
  fl.add_string("model", &f.model, "model: a .gguf file or a Hugging Face checkpoint directory (required)", "PATH");
  fl.add_string("tokenizer", &f.tokenizer,
                "tokenizer file or directory, instead of the one in or beside the model", "PATH");
  if (run) {
    fl.add_string("prompt", &f.prompt, "the prompt (required unless --interactive); not echoed to stdout");
    fl.add_bool("interactive", &f.interactive, "multi-turn chat on stdin, as `offgraph chat`");
  }
  fl.add_string("system", &f.system, "system message (chat templates that have one)");
  std::vector<std::string> chats = chat_template_names();
  chats.insert(chats.begin(), "auto");
  fl.add_choice("chat", &f.chat, chats,
                "chat template; auto = the one stored with the model (raw text if none); 0 = raw text");
  add_sampling_flags(fl, f, "", 100);
  fl.add_int("seed", &f.seed, -1, std::numeric_limits<int64_t>::max(),
             "sampling seed; the same seed gives the same output; -1 = random");
  fl.add_int("max-new-tokens", &f.max_new_tokens, 0, kIntMax,
              run ? "tokens to generate (the prompt excluded)"
                 : batch ? "tokens to generate per prompt (a JSON line may set its own)" : "tokens to generate per turn");
  fl.add_repeated("stop", &f.stop, "stop when the generated text contains this string (not printed)");
  fl.add_int("kv-max-capacity", &f.kv_max_capacity, 0, kIntMax,
             batch ? "positions one session's cache may hold; 0 = --max-session-tokens, else min(model context "
                     "length, 4096)"
                   : "positions the cache may hold; 0 = min(model context length, 4096)");
  fl.add_int("kv-initial-capacity", &f.kv_initial_capacity, 1, kIntMax,
             "positions allocated at start for flat layers (grows by doubling, clamped to the max)");
  fl.add_choice("kv-storage-dtype", &f.kv_storage_dtype, {"f32", "f16", "bf16", "q8_0"}, "cache storage type");
  fl.add_int_list("kv-windows", &f.kv_windows, 0, kIntMax,
                  "window override repeated over the model's caches; 0 = flat", "the model's windows");
  if (batch) {
    f.kv_cache = "batched-cell";
    fl.add_choice("cache-kind", &f.kv_cache, {"batched-cell", "batched-sequence"},
                  "shared cache kind: batched-cell (blocks shared copy-on-write by prefix forks) or "
                  "batched-sequence (own storage per sequence, prefixes copied)");
  } else {
    fl.add_choice("kv-cache", &f.kv_cache, {"sequence", "reference"},
                  "cache kind: sequence (rings for windowed layers) or reference (keeps everything)");
  }
  fl.add_int("prefill-chunk-size", &f.prefill_chunk_size, 1, kIntMax,
             "prefill runs in chunks of this many tokens; bounds ring layers; when not given (shown as 0): the "
             "model file's offgraph.kv.prefill_chunk_size, else 512");
  fl.add_int("threads", &f.threads, 0, 1024, "worker threads; 0 = all cores");
  fl.add_bool("mmap", &f.mmap, "keep weights in the mapped file instead of copying them into huge pages at load (faster load, fewer resident pages)");
  if (run) fl.add_bool("warmup", &f.warmup, "one unmeasured run first (not with --interactive)");
  fl.add_choice("stats", &f.stats, {"text", "json"}, "report format on stderr");
  fl.add_string("stats-file", &f.stats_file, "also write the report as one JSON object to this file", "PATH");
}

void check_llm_flags(const Flags& fl, const LlmFlags& f, bool run) {
  if (f.model.empty()) usage_fail("--model is required");
  std::error_code ec;
  // A path that does not exist is an unreadable file (exit 1), as in every command.
  if (!std::filesystem::exists(f.model, ec)) fail(f.model, ": no such file or directory (--model)");
  if (!f.tokenizer.empty() && !std::filesystem::exists(f.tokenizer, ec))
    fail(f.tokenizer, ": no such file or directory (--tokenizer)");
  if (run && !f.interactive && !fl.given("prompt")) usage_fail("--prompt is required (or use --interactive)");
  if (run && f.interactive && fl.given("prompt"))
    usage_fail("--prompt cannot be combined with --interactive (type the turns on stdin)");
  if (run && f.interactive && f.warmup) usage_fail("--warmup cannot be combined with --interactive");
  if (f.kv_max_capacity > 0 && fl.given("kv-initial-capacity") && f.kv_initial_capacity > f.kv_max_capacity)
    usage_fail("--kv-initial-capacity " + std::to_string(f.kv_initial_capacity) + " exceeds --kv-max-capacity " +
               std::to_string(f.kv_max_capacity));
  if (f.temperature == 0 && (fl.given("top-k") || fl.given("top-p") || fl.given("min-p")))
    usage_fail("--top-k, --top-p and --min-p need --temperature > 0 (temperature 0 is greedy)");
}

ModelSetup model_setup_of(const LlmFlags& f) {
  ModelSetup s;
  s.model = f.model;
  s.tokenizer = f.tokenizer;
  s.chat = f.chat;
  s.mmap = f.mmap;
  return s;
}

CacheSetup cache_setup_of(const LlmFlags& f) {
  CacheSetup s;
  s.kind = f.kv_cache;
  s.max_capacity = f.kv_max_capacity;
  s.initial_capacity = f.kv_initial_capacity;
  s.storage_dtype = f.kv_storage_dtype;
  s.windows = f.kv_windows;
  s.prefill_chunk_size = f.prefill_chunk_size;
  return s;
}

Loaded load_llm(const LlmFlags& f) { return load_model(model_setup_of(f)); }

KvPolicy kv_policy_of(const LlmFlags& f, const Model& model) {
  std::string warning;
  const KvPolicy p = kv_policy_of(cache_setup_of(f), model, &warning);
  if (!warning.empty()) std::fprintf(stderr, "[warning] %s\n", warning.c_str());
  return p;
}

std::unique_ptr<KvCache> make_cache_of(const LlmFlags& f, const Model& model, const KvPolicy& policy) {
  return make_cache(cache_setup_of(f), model, policy);
}

SamplerConfig sampler_config_of(const LlmFlags& f) {
  SamplerConfig c;
  c.temperature = f.temperature;
  c.top_k = static_cast<int>(f.top_k);
  c.top_p = f.top_p;
  c.min_p = f.min_p;
  c.repeat_penalty = f.repeat_penalty;
  c.repeat_last_n = static_cast<int>(f.repeat_last_n);
  c.presence_penalty = f.presence_penalty;
  c.frequency_penalty = f.frequency_penalty;
  c.seed = resolve_seed(f.seed);
  return c;
}

GenerateOptions generate_options_of(const LlmFlags& f, const Loaded& l) {
  GenerateOptions o;
  o.max_new_tokens = f.max_new_tokens;
  o.stop_ids = l.stop_ids;
  o.stop_strings = f.stop;
  o.interrupt = &interrupted();
  return o;
}

void print_cache_describe(const KvCache& cache) {
  std::fprintf(stderr, "%s\n", cache.describe().c_str());
}

void print_fill(const char* when, const Session& s) {
  const KvMemory m = s.cache().memory();
  std::fprintf(stderr, "[cache] %s: %lld/%lld positions, %.2f MiB allocated, %.2f MiB used (flat %.2f/%.2f, ring %.2f/%.2f)\n",
               when, static_cast<long long>(s.cached()), static_cast<long long>(s.capacity()), mib(m.allocated()),
               mib(m.used()), mib(m.flat_allocated), mib(m.flat_used), mib(m.ring_allocated), mib(m.ring_used));
  std::fprintf(stderr, "[mem] %s: rss %.1f MiB, peak rss %.1f MiB\n", when, mib(current_rss_bytes()),
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
  j["peak_rss_bytes"] = peak_rss_bytes();
  j["cache_positions"] = s.cached();
  j["cache_capacity"] = s.capacity();
  j["cache_bytes_allocated"] = s.cache().memory().allocated();
  if (stop_reason) j["stop_reason"] = stop_reason;
  return j.dump();
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
    std::fprintf(stderr, "%s\n", report_json(s, stop_reason).c_str());
    return;
  }
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

namespace {
std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  // A second Ctrl-C before the first was handled: end as SIGINT would.
  if (g_interrupted.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}
}  // namespace

void install_interrupt_handler(bool restart_reads) {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart_reads ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, nullptr);
}

std::atomic<bool>& interrupted() { return g_interrupted; }

}  // namespace og::app
