// What `offgraph run`, `chat` and `batch` share: their flags (from the shared
// table), the built run, and the stderr reports ([cache], [mem], the stats report in text or JSON).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/flags.h"
#include "chat/chat_request.h"
#include "chat/chat_template.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "runtime/model_chat.h"
#include "runtime/run_builder.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/stats.h"
#include "shared_flags.h"
#include "tokenizer/tokenizer.h"

namespace og::app {

struct LlmFlags {
  RunConfig run;           // --model --tokenizer --chat --mmap, the cache flags, --threads
  SamplingFlags sampling;  // --temperature ... --seed
  std::string prompt, system;
  int64_t max_new_tokens = 256;
  std::vector<std::string> stop;
  bool ignore_eos = false;  // --ignore-eos: only --max-new-tokens and --stop end a reply
  bool warmup = false;
  bool interactive = false;
  std::string stats = "text";
  std::string stats_file;  // also write the JSON report here ("" = no file)
  std::string json_schema;  // --json-schema: a file or the JSON text itself
  std::string grammar;      // --grammar: a GBNF grammar file
  RenderLimitFlags render_limits;  // --template-max-*: the chat template's renders
};

// Registers the flags; `run` adds --prompt and --interactive; `batch` offers
// --cache-kind batched-cell|batched-sequence instead of --kv-cache.
void add_llm_flags(Flags& flags, LlmFlags& f, bool run, bool batch = false);
// Checks what parse() cannot (paths exist, combinations); throws UsageError.
void check_llm_flags(const Flags& flags, const LlmFlags& f, bool run);

// The built run (runtime/run_builder.h); the policy's warning is printed.
Run build_llm_run(const RunConfig& c);
SamplerConfig sampler_config_of(const SamplingFlags& s);  // resolves seed -1 to a random one
GenerateOptions generate_options_of(const LlmFlags& f, const LoadedModel& l);
// How the commands render a chat (chat/chat_request.h plan_chat): the model's
// setup as the server and the C API have it (runtime/model_chat.h), with the
// words of a refusal that names --chat; a tool_use variant that does not
// parse is a warning on stderr.
ModelChat chat_setup_of(const LoadedModel& l);
// --json-schema / --grammar compiled against the run's vocabulary (empty when
// neither is given). og::Error (exit 1) naming the flag on an unreadable file,
// invalid JSON, a schema keyword outside the supported subset or a bad grammar.
GrammarConstraint structured_output_of(const LlmFlags& f, const Tokenizer& tok);

// Prints the cache's describe() lines to stderr.
void print_cache_describe(const KvCache& cache);
// "[cache] <when>: ..." and "[mem] <when>: ..." to stderr.
void print_fill(const char* when, const Session& session);
// The report: text lines on stderr (when diagnostics are on), or one JSON
// object (--stats json) as the last line of stdout; with --stats-file the JSON
// object goes to that file (an og::Error if it cannot be written), and with
// --stats json only there. stop_reason: the (last) turn's, or null.
void print_report(const LlmFlags& f, const Session& session, const char* stop_reason);
std::string report_json(const Session& session, const char* stop_reason);
// chat's /stats: the report on stderr now (JSON with --stats json, else text),
// whatever the verbosity, since it was asked for; no file is written.
void print_report_asked(const LlmFlags& f, const Session& session, const char* stop_reason);
// `line` and a newline on stdout; an og::Error when it cannot be written.
void write_stdout_line(const std::string& line);

// Ctrl-C and SIGTERM. The first SIGINT or SIGTERM sets interrupted() (work
// stops at the next safe point: GenerateOptions.interrupt, the batch loop,
// bench's repetitions, the converters' tensors; chat's line reader polls it); a
// second one while it is still set ends the process as the signal does.
// Installed whatever the inherited disposition (a background job's ignored
// SIGINT included). restart_reads: interrupted reads and writes resume
// (SA_RESTART). Clear the flag to arm it again.
void install_interrupt_handler(bool restart_reads);
std::atomic<bool>& interrupted();
int stop_signal();            // the last SIGINT/SIGTERM received, 0 = none
int interrupted_exit_code();  // 130 after SIGINT, 143 after SIGTERM (128 + the signal)

}  // namespace og::app
