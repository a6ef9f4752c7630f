// The one table of the flags that more than one command takes. Each shared
// flag is declared here once (name, type, range, help, check) and registered
// by every command that takes it, so that the same flag parses, defaults and
// fails the same way in run, chat, batch, serve, bench, inspect, tokenize,
// export and quantize. Values land directly in the run configuration
// (runtime/run_builder.h) that the commands hand to build_run().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/flags.h"
#include "runtime/run_builder.h"

namespace og::app {

// Every command's Flags: its usage line, -q/--quiet and -v/--verbose, and
// llama.cpp's flags that offgraph lacks answered with what to do instead.
Flags command_flags(const std::string& command, const std::string& synopsis);

// What goes to stderr besides errors. kQuiet: errors and warnings only;
// kNormal: also the diagnostic lines ([cache], [mem], [stats], progress);
// kVerbose: everything, even where machine-readable output asks for silence.
enum class Verbosity { kQuiet, kNormal, kVerbose };
Verbosity verbosity();
// Machine-readable output was asked for (--stats json): stderr then carries
// no diagnostic lines unless --verbose.
void set_machine_output(bool on);
// Whether diagnostic lines are printed now.
bool diagnostics_on();
// A diagnostic line on stderr (printf-style; the caller ends it with \n), only
// when diagnostics_on().
void diag(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// A warning: "[warning] TEXT" on stderr, even with --quiet; with machine output
// (and no --verbose) it is kept for the JSON report instead (warnings()).
void warn(const std::string& text);
const std::vector<std::string>& warnings();

// --model PATH (also -m, llama.cpp's). `what` replaces the standard description where a command takes
// a narrower kind of file (export: an HF directory).
void add_model_flag(Flags& fl, std::string* path, const std::string& what = "");
// --tokenizer PATH.
void add_tokenizer_flag(Flags& fl, std::string* path);
// --mmproj FILE: a vision tower in llama.cpp's mmproj GGUF (ModelSetup::mmproj).
void add_mmproj_flag(Flags& fl, std::string* path);
// --no-mmproj: ModelSetup::no_mmproj.
void add_no_mmproj_flag(Flags& fl, bool* no_mmproj);
// --chat NAME|auto|0 and --chat-template-file PATH; `use` says what the
// template is for in this command.
void add_chat_flag(Flags& fl, ModelSetup& m, const std::string& use);
// --mmap and --experts-in-memory.
void add_mmap_flag(Flags& fl, bool* mmap, bool* experts_in_memory);
// --threads N (0 = all cores).
void add_threads_flag(Flags& fl, int64_t* threads, const std::string& what = "worker threads");
// --model, --tokenizer, --chat and --mmap into the model part of a run.
void add_model_flags(Flags& fl, ModelSetup& m, const std::string& chat_use);

// Which cache flags a command takes: one session (run, chat: --kv-cache
// sequence|reference) or many sessions over one shared cache (batch, serve:
// --cache-kind batched-cell|batched-sequence, --kv-block-size).
enum class CacheScope { kOneSession, kShared };
// --kv-storage-dtype.
void add_kv_dtype_flag(Flags& fl, std::string* dtype);
// --cache-kind of the shared kinds; the current value of *kind is the default.
void add_shared_cache_kind_flag(Flags& fl, std::string* kind, const std::string& help);
// --prefill-chunk-size; `help` says what it bounds in this command.
void add_prefill_chunk_flag(Flags& fl, int64_t* rows, int64_t min, const std::string& help);
// The cache flags of a run: capacity, initial capacity, dtype, windows, kind,
// prefill chunk (and block size for kShared). Sets the scope's default kind.
void add_cache_flags(Flags& fl, CacheSetup& c, CacheScope scope);

// The sampler's settings as flags (SamplerConfig once resolved).
struct SamplingFlags {
  double temperature = 0, top_p = 1, min_p = 0, repeat_penalty = 1;
  double presence_penalty = 0, frequency_penalty = 0;
  int64_t top_k = 0, repeat_last_n = 64, seed = -1;
};
// Temperature, top-k/p, min-p, repetition, presence and frequency penalties
// and --seed. Serve's values are the defaults of requests: `prefix` starts each
// help line. Their bounds are checked by check_sampling_bounds().
void add_sampling_flags(Flags& fl, SamplingFlags& s, const std::string& prefix, const std::string& seed_help);
// The sampler flags, --max-new-tokens and --stop against the bounds every edge
// shares (runtime/generation_limits.h): a usage error naming the flag.
void check_sampling_bounds(const SamplingFlags& s, int64_t max_new_tokens, const std::vector<std::string>& stop);

// The bounds of a chat template's render (template/template.h RenderLimits),
// taken by every command that renders one: serve, run, chat, batch, template.
struct RenderLimitFlags {
  int64_t max_work = 0, max_ms = 0, max_value_bytes = 0, max_memory_bytes = 0;
};
// --template-max-work, --template-max-ms, --template-max-value-bytes and
// --template-max-memory-bytes, defaulting to the built-in limits.
void add_render_limit_flags(Flags& fl, RenderLimitFlags& f);
// Makes them the limits of every render of this process (call after parse()).
void apply_render_limit_flags(const RenderLimitFlags& f);

// serve's bounds of what a request's JSON may hold: the body's parse
// (server/json_body.h) and json_schema / tool schema compilation
// (grammar/json_schema.h JsonSchemaLimits).
struct RequestLimitFlags {
  int64_t json_max_keys = 0, json_max_depth = 0;
  int64_t schema_max_properties = 0, schema_max_branches = 0, schema_max_enum_values = 0, schema_max_work = 0;
};
// --json-max-keys, --json-max-depth, --schema-max-properties,
// --schema-max-branches, --schema-max-enum-values, --schema-max-work.
void add_request_limit_flags(Flags& fl, RequestLimitFlags& f);
void apply_request_limit_flags(const RequestLimitFlags& f);

// Checks of a run's shared flags that parse() cannot make: --model given
// (usage, exit 2), the paths exist (og::Error, exit 1: an unreadable input),
// capacity combinations, sampling combinations. The same in every command.
void check_run_flags(const Flags& fl, const RunConfig& c);
void check_model_given(const std::string& model);  // "--model is required" (exit 2)
void check_sampling_flags(const Flags& fl, const SamplingFlags& s);

}  // namespace og::app
