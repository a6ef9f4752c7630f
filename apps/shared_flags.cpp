// The shared flag table (shared_flags.h).
#include "shared_flags.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <limits>

#include "chat/chat_template.h"
#include "grammar/json_schema.h"
#include "llama_habits.h"
#include "runtime/generation_limits.h"
#include "runtime/input_limits.h"
#include "server/json_body.h"
#include "template/template.h"

namespace og::app {

namespace {
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
bool g_quiet = false, g_verbose = false, g_machine = false;
}  // namespace

Flags command_flags(const std::string& command, const std::string& synopsis) {
  Flags fl(command, synopsis);
  g_quiet = g_verbose = g_machine = false;
  fl.add_bool("quiet", &g_quiet, "errors and warnings only on stderr");
  fl.add_short('q', "quiet");
  fl.add_bool("verbose", &g_verbose, "every diagnostic line on stderr, also next to machine-readable output");
  fl.add_short('v', "verbose");
  add_llama_cpp_habits(fl, command);
  return fl;
}

Verbosity verbosity() {
  if (g_verbose) return Verbosity::kVerbose;
  return g_quiet ? Verbosity::kQuiet : Verbosity::kNormal;
}

void set_machine_output(bool on) { g_machine = on; }

bool diagnostics_on() { return g_verbose || (!g_quiet && !g_machine); }

void diag(const char* fmt, ...) {
  if (!diagnostics_on()) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
}

namespace {
std::vector<std::string>& warning_list() {
  static std::vector<std::string> w;
  return w;
}
}  // namespace

void warn(const std::string& text) {
  warning_list().push_back(text);
  if (g_machine && !g_verbose) return;
  std::fprintf(stderr, "[warning] %s\n", text.c_str());
}

const std::vector<std::string>& warnings() { return warning_list(); }

void add_model_flag(Flags& fl, std::string* path, const std::string& what) {
  fl.add_string("model", path,
                what.empty() ? "model: a .gguf file or a Hugging Face checkpoint directory (required)" : what, "PATH");
  fl.add_short('m', "model");
}

void add_tokenizer_flag(Flags& fl, std::string* path) {
  fl.add_string("tokenizer", path, "tokenizer file or directory, instead of the one in or beside the model", "PATH");
}

void add_mmproj_flag(Flags& fl, std::string* path) {
  fl.add_string("mmproj", path,
                "a vision tower in llama.cpp's mmproj GGUF, loaded beside the model (as llama-mtmd-cli's --mmproj; "
                "Gemma 3's); an HF directory's own tower loads without it; default: none",
                "FILE");
}

void add_no_mmproj_flag(Flags& fl, bool* no_mmproj) {
  fl.add_bool("no-mmproj", no_mmproj,
              "load no vision tower, not even an HF directory's own (as llama.cpp's --no-mmproj); images are "
              "then refused as by a text-only model");
}

void add_chat_flag(Flags& fl, ModelSetup& m, const std::string& use) {
  std::vector<std::string> chats = chat_template_names();
  chats.insert(chats.begin(), "auto");
  fl.add_choice("chat", &m.chat, chats,
                use + ": auto = the model's own Jinja template (raw text if it has none), or a built-in format; 0 = "
                      "raw text");
  fl.add_string("chat-template-file", &m.chat_template_file,
                "a Jinja chat template file to use instead of the model's (rendered as Hugging Face transformers "
                "does)",
                "PATH");
}

void add_mmap_flag(Flags& fl, bool* mmap, bool* experts_in_memory) {
  fl.add_bool("mmap", mmap,
              "keep weights in the mapped file instead of copying them into huge pages at load (faster load, fewer "
              "resident pages)");
  fl.add_bool("experts-in-memory", experts_in_memory,
              "copy a mixture of experts' expert matrices into huge pages too (default: they stay in the mapped "
              "file and only the routed ones are paged in; the dense part is copied either way)");
}

void add_threads_flag(Flags& fl, int64_t* threads, const std::string& what) {
  fl.add_int("threads", threads, 0, 1024, what + "; 0 = all cores");
  fl.add_short('t', "threads");
}

void add_model_flags(Flags& fl, ModelSetup& m, const std::string& chat_use) {
  add_model_flag(fl, &m.model);
  add_tokenizer_flag(fl, &m.tokenizer);
  add_chat_flag(fl, m, chat_use);
  add_mmap_flag(fl, &m.mmap, &m.experts_in_memory);
}

void add_kv_dtype_flag(Flags& fl, std::string* dtype) {
  fl.add_choice("kv-storage-dtype", dtype, {"f32", "f16", "bf16", "q8_0"}, "cache storage type");
}

void add_shared_cache_kind_flag(Flags& fl, std::string* kind, const std::string& help) {
  fl.add_choice("cache-kind", kind, {"batched-cell", "batched-sequence"}, help);
}

void add_prefill_chunk_flag(Flags& fl, int64_t* rows, int64_t min, const std::string& help) {
  fl.add_int("prefill-chunk-size", rows, min, kIntMax, help);
}

void add_cache_flags(Flags& fl, CacheSetup& c, CacheScope scope) {
  const bool shared = scope == CacheScope::kShared;
  fl.add_int("kv-max-capacity", &c.max_capacity, 0, kIntMax,
             shared ? "positions one session's cache may hold; 0 = --max-session-tokens, else min(model context "
                      "length, 4096)"
                    : "positions the cache may hold; 0 = min(model context length, 4096)");
  if (!shared) {  // llama.cpp's context size means the same for one session (serve: see llama_habits.cpp)
    fl.add_short('c', "kv-max-capacity");
    fl.add_alias("--ctx-size", "kv-max-capacity");
  }
  fl.add_int("kv-initial-capacity", &c.initial_capacity, 1, kIntMax,
             shared ? "positions allocated at start for flat layers (batched-sequence; grows by doubling)"
                    : "positions allocated at start for flat layers (grows by doubling, clamped to the max)");
  add_kv_dtype_flag(fl, &c.storage_dtype);
  fl.add_int_list("kv-windows", &c.windows, 0, kIntMax,
                  "window override repeated over the model's caches; 0 = flat", "the model's windows");
  if (shared) {
    c.kind = "batched-cell";
    add_shared_cache_kind_flag(fl, &c.kind,
                               "shared cache kind: batched-cell (blocks shared copy-on-write by prefix forks) or "
                               "batched-sequence (own storage per sequence, prefixes copied)");
    fl.add_int("kv-block-size", &c.block_size, 1, 4096,
               "positions per block: the batched-cell pool's and the prefix cache's hashed blocks (KV events)");
    fl.add_alias("--block-size", "kv-block-size");  // vLLM's spelling
  } else {
    c.kind = "sequence";
    fl.add_choice("kv-cache", &c.kind, {"sequence", "reference"},
                  "cache kind: sequence (rings for windowed layers) or reference (keeps everything)");
  }
  add_prefill_chunk_flag(fl, &c.prefill_chunk_size, 1,
                         "most prompt rows one session writes per step; bounds ring layers; when not given (shown "
                         "as 0): the model file's offgraph.kv.prefill_chunk_size, else 512");
}

// The values are read whole and checked by check_sampling_bounds() against
// runtime/generation_limits.h, so a flag meets the server's and the C API's
// bound and message; the help states the bound.
void add_sampling_flags(Flags& fl, SamplingFlags& s, const std::string& prefix, const std::string& seed_help) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr int64_t kAnyMin = std::numeric_limits<int64_t>::min(), kAnyMax = std::numeric_limits<int64_t>::max();
  fl.add_float("temperature", &s.temperature, -kInf, kInf, prefix + "sampling temperature in [0, 2]; 0 = greedy");
  fl.add_alias("--temp", "temperature");
  fl.add_int("top-k", &s.top_k, kAnyMin, kAnyMax, prefix + "keep the k most likely tokens; 0 (or -1) = off");
  fl.add_float("top-p", &s.top_p, -kInf, kInf,
               prefix + "keep the smallest set with this probability mass, in (0, 1]; 1 = off");
  fl.add_float("min-p", &s.min_p, -kInf, kInf,
               prefix + "drop tokens below min-p times the top probability, in [0, 1]; 0 = off");
  fl.add_float("repeat-penalty", &s.repeat_penalty, -kInf, kInf,
               prefix + "penalty on recently seen tokens, in (0, 100]; 1 = off");
  fl.add_int("repeat-last-n", &s.repeat_last_n, kAnyMin, kAnyMax,
             prefix + "how many recent tokens the penalty looks at");
  fl.add_float("presence-penalty", &s.presence_penalty, -kInf, kInf,
               prefix + "penalty subtracted once from each token already generated this turn, in [-2, 2]; 0 = off");
  fl.add_float("frequency-penalty", &s.frequency_penalty, -kInf, kInf,
               prefix + "penalty subtracted per earlier generation of a token this turn, in [-2, 2]; 0 = off");
  fl.add_int("seed", &s.seed, -1, std::numeric_limits<int64_t>::max(), seed_help);
  fl.add_short('s', "seed");
}

void check_model_given(const std::string& model) {
  if (model.empty()) usage_fail("--model is required");
}

void check_run_flags(const Flags& fl, const RunConfig& c) {
  check_model_given(c.model.model);
  // A path that does not exist is an unreadable input (exit 1), as in every command.
  check_model_paths(c.model);
  if (c.cache.max_capacity > 0 && fl.given("kv-initial-capacity") && c.cache.initial_capacity > c.cache.max_capacity)
    usage_fail("--kv-initial-capacity " + std::to_string(c.cache.initial_capacity) + " exceeds --kv-max-capacity " +
               std::to_string(c.cache.max_capacity));
}

void check_sampling_bounds(const SamplingFlags& s, int64_t max_new_tokens, const std::vector<std::string>& stop) {
  GenerationSettings g;
  g.temperature = s.temperature;
  g.top_p = s.top_p;
  g.min_p = s.min_p;
  g.repeat_penalty = s.repeat_penalty;
  g.presence_penalty = s.presence_penalty;
  g.frequency_penalty = s.frequency_penalty;
  g.top_k = s.top_k;
  g.repeat_last_n = s.repeat_last_n;
  g.max_tokens = max_new_tokens;
  g.stop = stop;
  const auto found = check_generation_settings(g);
  if (found.empty()) return;
  const LimitViolation& v = found.front();
  std::string flag;
  switch (v.field) {
    case LimitField::kRepeatPenalty: flag = "--repeat-penalty"; break;
    case LimitField::kMaxTokens: flag = "--max-new-tokens"; break;
    default:
      flag = std::string("--") + limit_field_name(v.field);
      std::replace(flag.begin(), flag.end(), '_', '-');
  }
  usage_fail(describe_violation(v, flag));
}

void check_sampling_flags(const Flags& fl, const SamplingFlags& s) {
  if (s.temperature == 0 && (fl.given("top-k") || fl.given("top-p") || fl.given("min-p")))
    usage_fail("--top-k, --top-p and --min-p need --temperature > 0 (temperature 0 is greedy)");
}

namespace {

// A limit on untrusted input as a flag: read whole, checked after parsing
// against runtime/input_limits.h (check_input_limit), so the flag meets the C
// API's bound and words; the help states the range.
void add_input_limit_flag(Flags& fl, InputLimit which, int64_t* out, const std::string& help) {
  std::string name = input_limit_bounds(which).name;
  std::replace(name.begin(), name.end(), '_', '-');
  fl.add_int(name, out, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
             help + "; in " + input_limit_range(which));
}

void check_input_limit_flag(InputLimit which, int64_t v) {
  const std::string wrong = check_input_limit(which, v);
  if (wrong.empty()) return;
  std::string flag = std::string("--") + input_limit_bounds(which).name;
  std::replace(flag.begin(), flag.end(), '_', '-');
  usage_fail(flag + " " + wrong);
}

}  // namespace

void add_render_limit_flags(Flags& fl, RenderLimitFlags& f) {
  const jinja::RenderLimits& d = jinja::render_limits();
  f = {d.max_work, d.max_render_ms, d.max_output_bytes, d.max_memory_bytes};
  add_input_limit_flag(fl, InputLimit::kTemplateMaxWork, &f.max_work,
                       "work units one chat-template render may spend (a byte of text built, copied or compared "
                       "costs 1, a list or dict element 16, an expression or statement 64); 0 = 64 per byte of "
                       "--template-max-value-bytes (2^30 by default)");
  add_input_limit_flag(fl, InputLimit::kTemplateMaxMs, &f.max_ms,
                       "wall-clock milliseconds one chat-template render may take; 0 = no deadline");
  add_input_limit_flag(fl, InputLimit::kTemplateMaxValueBytes, &f.max_value_bytes,
                       "largest string, list or dict (128 bytes an item) a chat-template render may build, and its "
                       "output");
  add_input_limit_flag(fl, InputLimit::kTemplateMaxMemoryBytes, &f.max_memory_bytes,
                       "bytes of values one chat-template render may hold at once");
}

void apply_render_limit_flags(const RenderLimitFlags& f) {
  check_input_limit_flag(InputLimit::kTemplateMaxWork, f.max_work);
  check_input_limit_flag(InputLimit::kTemplateMaxMs, f.max_ms);
  check_input_limit_flag(InputLimit::kTemplateMaxValueBytes, f.max_value_bytes);
  check_input_limit_flag(InputLimit::kTemplateMaxMemoryBytes, f.max_memory_bytes);
  jinja::RenderLimits l;
  l.max_work = f.max_work;
  l.max_render_ms = f.max_ms;
  l.max_output_bytes = f.max_value_bytes;
  l.max_memory_bytes = f.max_memory_bytes;
  jinja::set_render_limits(l);
}

void add_request_limit_flags(Flags& fl, RequestLimitFlags& f) {
  const server::JsonLimits& j = server::json_limits();
  const grammar::JsonSchemaLimits& s = grammar::json_schema_limits();
  f = {j.max_keys, j.max_depth, s.max_properties, s.max_branches, s.max_enum_values, s.max_work};
  fl.add_int("json-max-keys", &f.json_max_keys, 1, int64_t{1} << 24,
             "most distinct keys of one object in a request's JSON (400 json_too_complex beyond)");
  fl.add_int("json-max-depth", &f.json_max_depth, 1, server::kMaxJsonDepthLimit,
             "deepest nesting of arrays and objects in a request's JSON (400 beyond)");
  add_input_limit_flag(fl, InputLimit::kSchemaMaxProperties, &f.schema_max_properties,
                       "properties (and required names) of one object in a json_schema or tool schema (400 beyond)");
  add_input_limit_flag(fl, InputLimit::kSchemaMaxBranches, &f.schema_max_branches,
                       "anyOf/oneOf branches of one schema, or object and array values of one enum (400 beyond)");
  add_input_limit_flag(fl, InputLimit::kSchemaMaxEnumValues, &f.schema_max_enum_values,
                       "values of one enum (400 beyond)");
  add_input_limit_flag(fl, InputLimit::kSchemaMaxWork, &f.schema_max_work,
                       "subschemas, enum values and properties compiled for one request's schemas and tools, in all: "
                       "their time bound (400 beyond)");
}

void apply_request_limit_flags(const RequestLimitFlags& f) {
  check_input_limit_flag(InputLimit::kSchemaMaxProperties, f.schema_max_properties);
  check_input_limit_flag(InputLimit::kSchemaMaxBranches, f.schema_max_branches);
  check_input_limit_flag(InputLimit::kSchemaMaxEnumValues, f.schema_max_enum_values);
  check_input_limit_flag(InputLimit::kSchemaMaxWork, f.schema_max_work);
  server::set_json_limits({f.json_max_keys, f.json_max_depth});
  grammar::JsonSchemaLimits s;
  s.max_properties = f.schema_max_properties;
  s.max_branches = f.schema_max_branches;
  s.max_enum_values = f.schema_max_enum_values;
  s.max_work = f.schema_max_work;
  grammar::set_json_schema_limits(s);
}

}  // namespace og::app
