// What `offgraph run` and `offgraph chat` share: their flags, loading the
// model / tokenizer / chat template, building the cache policy, and the
// stderr reports ([cache], [mem], the stats report in text or JSON).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flags.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "runtime/run_setup.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/stats.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace og::app {

struct LlmFlags {
  std::string model, tokenizer, prompt, system;
  std::string chat = "auto";
  double temperature = 0, top_p = 1, min_p = 0, repeat_penalty = 1;
  double presence_penalty = 0, frequency_penalty = 0;
  int64_t top_k = 0, repeat_last_n = 64, seed = -1;
  int64_t max_new_tokens = 256;
  std::vector<std::string> stop;
  int64_t kv_max_capacity = 0;  // 0: min(model n_ctx, kDefaultMaxCapacity)
  int64_t kv_initial_capacity = 512;
  std::string kv_storage_dtype = "f16";
  std::vector<int64_t> kv_windows;
  std::string kv_cache = "sequence";
  int64_t prefill_chunk_size = 0;  // 0 = not given: the model file's offgraph.kv.prefill_chunk_size, else 512
  int64_t threads = 0;  // 0: all cores
  bool warmup = false;
  bool mmap = false;  // weights stay in the mapped file (no huge-page copy)
  bool interactive = false;
  std::string stats = "text";
  std::string stats_file;  // also write the JSON report here ("" = no file)
};

// Registers the flags; `run` adds --prompt and --interactive; `batch` offers
// --cache-kind batched-cell|batched-sequence instead of --kv-cache.
void add_llm_flags(Flags& flags, LlmFlags& f, bool run, bool batch = false);
// The sampler's flags (temperature, top-k/p, min-p, repetition, presence and
// frequency penalties), shared by run/chat/batch and serve, whose values are
// the defaults of requests: `prefix` starts each help line, temperature is
// accepted up to `max_temperature`.
void add_sampling_flags(Flags& flags, LlmFlags& f, const std::string& prefix, double max_temperature);
// Checks what parse() cannot (paths exist, combinations); throws UsageError.
void check_llm_flags(const Flags& flags, const LlmFlags& f, bool run);

// The run set-up lives in runtime/run_setup.h; these adapt the flags to it.
using Loaded = LoadedModel;
ModelSetup model_setup_of(const LlmFlags& f);
CacheSetup cache_setup_of(const LlmFlags& f);
Loaded load_llm(const LlmFlags& f);
KvPolicy kv_policy_of(const LlmFlags& f, const Model& model);  // prints the policy's warning
// The cache the flags ask for; running out of memory building it is an error
// naming the flags that size it.
std::unique_ptr<KvCache> make_cache_of(const LlmFlags& f, const Model& model, const KvPolicy& policy);
SamplerConfig sampler_config_of(const LlmFlags& f);  // resolves seed -1 to a random one
GenerateOptions generate_options_of(const LlmFlags& f, const Loaded& l);

// Prints the cache's describe() lines to stderr.
void print_cache_describe(const KvCache& cache);
// "[cache] <when>: ..." and "[mem] <when>: ..." to stderr.
void print_fill(const char* when, const Session& session);
// The report: text lines or one JSON object (--stats json), to stderr; with
// --stats-file also the JSON object to that file (an og::Error if it cannot be
// written). stop_reason: the (last) turn's, or null when there was none.
void print_report(const LlmFlags& f, const Session& session, const char* stop_reason);
std::string report_json(const Session& session, const char* stop_reason);

// Ctrl-C. The first SIGINT sets interrupted() (generation stops at the next
// step: GenerateOptions.interrupt; chat's line reader polls it); a second one
// while it is still set ends the process as SIGINT does (exit status 130).
// restart_reads: interrupted reads and writes resume (SA_RESTART). Clear the
// flag to arm it again.
void install_interrupt_handler(bool restart_reads);
std::atomic<bool>& interrupted();
constexpr int kExitInterrupted = 130;

}  // namespace og::app
