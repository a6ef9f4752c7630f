// `offgraph serve`: an OpenAI-compatible HTTP server over the continuous-
// batching scheduler. It listens first (/health says 503 while the model
// loads), prints one ready line on stdout, logs to stderr, and on SIGINT or
// SIGTERM refuses new work, lets running requests finish within
// --shutdown-grace-s (then cancels them), and exits 128 + the signal; whatever
// is running, the process ends within the grace + 5 s (server/shutdown_watch.h), and
// at once when the signal comes while the model loads.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/error.h"
#include "base/flags.h"
#include "base/timer.h"
#include "chat/jinja_chat.h"
#include "chat/tool_grammar.h"
#include "commands.h"
#include "kv_events_flags.h"
#include "llm_common.h"
#include "model/config.h"
#include "runtime/embedder.h"
#include "runtime/engine.h"
#include "runtime/model_chat.h"
#include "runtime/run_builder.h"
#include "runtime/scheduler.h"
#include "scheduler_flags.h"
#include "spec_flags.h"
#include "server/auth.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "server/image_url_fetch.h"
#include "server/shutdown_watch.h"

namespace og::app {

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

// The prefix cache is on by default here, and prompts are prefilled one per
// step (the median time to first token matters more to a server's clients than
// to an offline batch).
SchedulerFlags serve_scheduler_defaults() {
  SchedulerFlags f;
  f.step_prefills = 1;
  f.prefix_cache_entries = 8;
  return f;
}

struct ServeFlags {
  RunConfig run;           // model, template, cache, threads
  SpecFlags spec;          // --spec ngram: prompt lookup in every session
  SchedulerSpec sched_spec;
  SamplingFlags sampling;  // the defaults of requests that give none
  int64_t max_new_tokens = 0;
  std::string host = "127.0.0.1";
  int64_t port = 8080;
  SchedulerFlags sched = serve_scheduler_defaults();
  int64_t max_queue = 64;
  int64_t max_n = 8;  // OpenAI's n: choices per request
  std::vector<std::string> api_keys;
  std::string api_key_file, alias;
  int64_t timeout_s = 600, max_body_bytes = 8 << 20, http_threads = 0;
  int64_t header_timeout_s = 10, max_connections = 4096;
  double shutdown_grace_s = 10;
  std::string reasoning_format = "auto";
  std::vector<std::string> cors_origins;
  std::vector<std::string> host_allow;
  std::string log_format = "text";
  bool log_probes = false;
  bool no_webui = false;
  bool allow_image_urls = false;  // image_url parts' http:// URLs fetched (bounded; no https)
  KvEventsFlags kv_events;  // --kv-events-*: the prefix cache's block events over ZeroMQ
  RenderLimitFlags render_limits;    // --template-max-*: a chat template's render
  RequestLimitFlags request_limits;  // --json-max-*, --schema-max-*: a request's JSON and schemas
};

const SchedulerFlagNames kSchedulerNames{"parallel", "requests decoded at once (sessions in the batch)", "request"};

void add_serve_flags(Flags& fl, ServeFlags& f) {
  add_model_flag(fl, &f.run.model.model);
  add_tokenizer_flag(fl, &f.run.model.tokenizer);
  add_mmproj_flag(fl, &f.run.model.mmproj);
  add_no_mmproj_flag(fl, &f.run.model.no_mmproj);
  add_chat_flag(fl, f.run.model, "chat template for /v1/chat/completions");
  fl.add_choice("reasoning-format", &f.reasoning_format, {"auto", "none"},
                "auto: a reply's reasoning (<think>...</think>, Gemma 4's thought channel) comes back as "
                "reasoning_content; none: it stays in content");
  fl.add_string("alias", &f.alias, "the model id clients name; default: the model file's name", "NAME");
  fl.add_string("host", &f.host, "address to listen on", "ADDR");
  fl.add_int("port", &f.port, 0, 65535, "port to listen on; 0 = any free port (the ready line says which)");
  fl.add_repeated("api-key", &f.api_keys, "a key clients must send as 'Authorization: Bearer KEY' (repeatable)",
                  "KEY");
  fl.add_string("api-key-file", &f.api_key_file, "a file of keys, one per line (blank lines and # comments skipped)",
                "PATH");
  fl.add_repeated("cors-origin", &f.cors_origins,
                  "an origin whose browser requests may read responses (CORS; * = any); none: no CORS headers",
                  "ORIGIN");
  fl.add_repeated("host-allow", &f.host_allow,
                  "a Host header name served besides --host's address (and localhost for a loopback one; * = "
                  "any): other names get 403, against DNS rebinding; without it a server bound to 0.0.0.0/:: or "
                  "with API keys serves any Host",
                  "NAME");
  fl.add_choice("log-format", &f.log_format, {"text", "json"},
                "the server's log lines on stderr (one per request once answered): text, or one JSON object per "
                "line");
  fl.add_bool("log-probes", &f.log_probes, "also log /health, /ready and /metrics requests");
  fl.add_bool("no-webui", &f.no_webui,
              "no chat page: / answers only 'Ollama is running' (text/plain) and /webui/* is 404; by default a "
              "browser opening / gets the chat page (docs/serving.md)");
  add_scheduler_flags(fl, f.sched, kSchedulerNames);
  add_spec_flags(fl, f.spec);
  add_kv_events_flags(fl, f.kv_events);
  fl.add_int("max-queue", &f.max_queue, 0, kIntMax,
             "requests waiting beyond --parallel before new ones get 429; 0 = unbounded");
  fl.add_int("max-n", &f.max_n, 1, 4096,
             "most choices one request may ask for (OpenAI's n; they decode side by side, forked from one "
             "prefill, so n is also at most --parallel); 400 beyond");
  fl.add_int("timeout-s", &f.timeout_s, 1, 86400,
             "socket read/write timeout: how long a client may stall sending a request or reading a reply");
  fl.add_int("header-timeout-s", &f.header_timeout_s, 1, 3600,
             "how long a client may take to send a request line and headers (408, then closed)");
  fl.add_int("max-connections", &f.max_connections, 1, 1 << 20,
             "open connections beyond which new ones get 503 and are closed (capped by the open-file limit)");
  fl.add_float("shutdown-grace-s", &f.shutdown_grace_s, 0, 3600,
               "on SIGINT/SIGTERM, how long running requests may finish before they are cancelled; the process "
               "ends within this + 5 s whatever it is doing (at once while the model loads)");
  fl.add_int("max-body-bytes", &f.max_body_bytes, 1024, kIntMax, "largest request body (413 beyond)");
  fl.add_bool("allow-image-urls", &f.allow_image_urls,
              "fetch image_url parts' http:// URLs (off: only data: URLs; at most 32 MiB and 10 s an image, no "
              "redirects, no https: no TLS library is linked)");
  add_request_limit_flags(fl, f.request_limits);
  add_render_limit_flags(fl, f.render_limits);
  fl.add_int("http-threads", &f.http_threads, 0, 65536,
             "requests answered at once (generation and tokenize; idle connections cost none); 0 = --parallel + "
             "--max-queue + 16");
  // Defaults of requests that give none; temperature within OpenAI's range as requests are.
  add_sampling_flags(fl, f.sampling, "default for requests that give none: ",
                     "seed of requests that give none; -1 = a random seed per request");
  // Bound checked by check_sampling_bounds(), as the sampler flags'.
  fl.add_int("max-new-tokens", &f.max_new_tokens, std::numeric_limits<int64_t>::min(),
             std::numeric_limits<int64_t>::max(),
             "max tokens of a chat request that gives none, in [0, 2^31 - 1]; 0 = up to the session limit");
  add_cache_flags(fl, f.run.cache, CacheScope::kShared);
  add_threads_flag(fl, &f.run.threads, "worker threads of the forward pass");
  add_mmap_flag(fl, &f.run.model.mmap, &f.run.model.experts_in_memory);
}

// --api-key values and the lines of --api-key-file; usage errors for empty keys or an unreadable file.
std::vector<std::string> api_keys_of(const ServeFlags& f) {
  std::vector<std::string> keys;
  for (const auto& k : f.api_keys) {
    if (k.empty()) usage_fail("--api-key: the key is empty");
    keys.push_back(k);
  }
  if (!f.api_key_file.empty()) {
    std::ifstream in(f.api_key_file);
    if (!in) usage_fail("--api-key-file: cannot read " + f.api_key_file);
    std::string line;
    while (std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      const size_t start = line.find_first_not_of(" \t");
      if (start == std::string::npos || line[start] == '#') continue;
      keys.push_back(line.substr(start));
    }
    if (keys.size() == f.api_keys.size()) usage_fail("--api-key-file: no key in " + f.api_key_file);
  }
  return keys;
}

void check_serve_flags(const Flags& fl, ServeFlags& f) {
  check_run_flags(fl, f.run);
  // No sampling combination check: these are defaults, and a request that sets
  // its own temperature takes --top-k and the others with it. The bounds are
  // a request's.
  check_sampling_bounds(f.sampling, f.max_new_tokens, {});
  check_scheduler_flags(f.sched, kSchedulerNames, f.run.cache);
  f.sched_spec = scheduler_spec_of(fl, f.spec);
  check_kv_events_flags(fl, f.kv_events, f.sched.prefix_cache_entries > 0);
  for (const std::string& o : f.cors_origins)
    if (o.empty()) usage_fail("--cors-origin: the origin is empty");
  for (const std::string& h : f.host_allow)
    if (h != "*" && server::normalize_host(h).empty())
      usage_fail("--host-allow: '" + h + "' is not a host name or IP address");
  apply_request_limit_flags(f.request_limits);
  apply_render_limit_flags(f.render_limits);
}

std::string model_name_of(const std::string& path) {
  std::filesystem::path p(path);
  if (p.has_filename() && p.extension() == ".gguf") return p.stem().string();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

// The cache's describe() lines joined into one (indentation dropped).
std::string joined_lines(const std::string& s) {
  std::string out;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find('\n', at);
    if (end == std::string::npos) end = s.size();
    const size_t start = s.find_first_not_of(" \t", at);
    if (start < end) out += (out.empty() ? "" : " ; ") + s.substr(start, end - start);
    at = end + 1;
  }
  return out;
}

}  // namespace

int cmd_serve(const Args& args) {
  ServeFlags f;
  Flags fl = command_flags("serve", "--model M [--host 127.0.0.1] [--port 8080] [options]");
  add_serve_flags(fl, f);
  if (!fl.parse(args)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_serve_flags(fl, f);
  signal(SIGPIPE, SIG_IGN);  // a client that went away is a failed write, not the end of the server
  // Before anything is read (key files, the model), and destroyed last: the
  // watch bounds the start-up and the whole shutdown, the destructors of the
  // server and the scheduler included.
  server::ShutdownWatch watch(f.shutdown_grace_s);
  server::HttpOptions ho;
  ho.host = f.host;
  ho.port = static_cast<int>(f.port);
  ho.api_keys = api_keys_of(f);
  ho.max_body_bytes = f.max_body_bytes;
  server::ImageUrlFetch fetch;
  fetch.allowed = f.allow_image_urls;
  server::set_image_url_fetch(fetch);
  ho.timeout_s = static_cast<int>(f.timeout_s);
  ho.header_timeout_s = static_cast<int>(f.header_timeout_s);
  ho.max_connections = static_cast<int>(f.max_connections);
  ho.cors_origins = f.cors_origins;
  ho.host_allow = f.host_allow;
  ho.log_json = f.log_format == "json";
  ho.log_probes = f.log_probes;
  ho.webui = !f.no_webui;
  const int64_t parallel = f.sched.sessions;
  ho.max_in_flight = f.max_queue > 0 ? static_cast<int>(parallel + f.max_queue) : 0;
  ho.http_threads =
      static_cast<int>(f.http_threads > 0 ? f.http_threads : parallel + (f.max_queue > 0 ? f.max_queue : 64) + 16);

  // Opened before anything else so that a bad or busy endpoint fails at once;
  // declared before the scheduler, which sends its last events (all blocks
  // cleared) as it shuts down.
  std::unique_ptr<server::KvEventsPublisher> kv_events = start_kv_events(f.kv_events);
  // Declared in the order that lets the HTTP server go first on every exit path.
  Run run;
  std::unique_ptr<ModelEngine> engine;
  std::unique_ptr<SchedulerDraft> draft;  // --model-draft: outlives the scheduler
  std::unique_ptr<Scheduler> sched;
  server::ServedModel served;
  std::unique_ptr<Embedder> embedder;  // /v1/embeddings, for a model that declares a pooling type
  ModelChat chat;  // the model's chat setup (runtime/model_chat.h): served points into it
  std::unique_ptr<server::SchedulerAdapter<Scheduler>> port;
  server::HttpServer http(ho);
  if (kv_events) {
    server::KvEventsPublisher* p = kv_events.get();
    http.metrics().kv_events = [p] {
      const server::KvEventsPublisher::Counts c = p->counts();
      return server::KvEventCounts{c.events, c.dropped_events};
    };
  }
  const int bound = http.bind();
  http.start();
  std::fprintf(stderr, "[serve] listening on http://%s:%d, loading %s\n", f.host.c_str(), bound, f.run.model.model.c_str());

  f.run.cache.max_sequences = static_cast<int>(parallel + f.sched.prefix_cache_entries);
  run = build_run(f.run);
  if (!run.warning.empty()) std::fprintf(stderr, "[warning] %s\n", run.warning.c_str());
  const LoadedModel& loaded = run.loaded;
  SchedulerOptions so = scheduler_options_of(f.sched, run.policy);
  so.spec = f.sched_spec;
  draft = make_scheduler_draft(f.spec, run, so);
  if (draft) {
    draft->apply(&so);
    std::fprintf(stderr, "%s\n", draft->describe().c_str());
  }
  so.prefix_disk.shutdown_write_s = server::kShutdownWriteBackS;  // a part of the shutdown watch's margin
  // The server alone bounds requests in flight (--parallel + --max-queue, 429
  // beyond): it counts a request until its HTTP reply is written, the scheduler
  // until the step after it finishes, so a second bound here could refuse a
  // request the server just made room for.
  so.max_queue = 0;
  if (kv_events) {
    so.kv_events = kv_events->sink();
    std::fprintf(stderr, "[serve] KV events on %s (topic '%s'%s%s)\n", kv_events->endpoint().c_str(),
                 f.kv_events.topic.c_str(), kv_events->replay_endpoint().empty() ? "" : ", replay on ",
                 kv_events->replay_endpoint().c_str());
  }
  so.image_width = loaded.model->config().d_model;  // a request's image rows must be this wide
  engine = std::make_unique<ModelEngine>(*loaded.model);
  sched = std::make_unique<Scheduler>(*engine, *loaded.tok, run.make_cache(), so);
  sched->start();

  served.id = f.alias.empty() ? model_name_of(f.run.model.model) : f.alias;
  served.tok = loaded.tok.get();
  served.tmpl = loaded.tmpl.get();
  // The setup the commands and the C API assemble too: the model's "tool_use"
  // variant for requests with tools when the run renders with the model's own
  // template, what replies hold, reasoning parsed unless --reasoning-format none.
  ChatSetupOptions chat_options;
  chat_options.parse_reasoning = f.reasoning_format == "auto";
  chat = model_chat_of(loaded, chat_options);
  if (!chat.warning.empty()) std::fprintf(stderr, "[warning] %s\n", chat.warning.c_str());
  served.tool_use = chat.setup.tool_use;
  served.reply_format = chat.setup.reply_format;
  served.parse_reasoning = chat.setup.parse_reasoning;
  served.grammar_vocab = grammar_vocab(*loaded.tok);  // structured output's vocabulary index, built once
  // Required tool calls in a format whose markers are control tokens (Mistral) need them admitted.
  if (const auto markers = tool_grammar_markers(served.reply_format); has_control_token(*loaded.tok, markers))
    served.tool_grammar_vocab = grammar_vocab(*loaded.tok, markers);
  served.stop_ids = loaded.stop_ids;
  served.max_session_tokens = so.max_session_tokens;
  served.default_max_tokens = f.max_new_tokens;
  served.max_n = f.max_n;
  served.max_sequences = so.max_decode_sequences;
  served.sampler = sampler_config_of(f.sampling);
  served.random_seed = f.sampling.seed < 0;
  served.use_prefix_cache = f.sched.prefix_cache_entries > 0;
  served.created = static_cast<int64_t>(std::time(nullptr));
  if (embedding_refusal(*loaded.model).empty()) embedder = std::make_unique<Embedder>(*loaded.model);
  served.embedder = embedder.get();
  served.generates = loaded.model->config().causal;
  served.facts = server::model_facts(*loaded.model, *loaded.source);  // Ollama's /api/tags, /api/show
  served.vision = loaded.vision.get();  // image_url parts and Ollama's images (null: refused)
  port = std::make_unique<server::SchedulerAdapter<Scheduler>>(*sched);
  watch.set_ready();  // a signal from now on drains; before, it ended the load at once
  http.set_model(served, *port);
  const std::string replies = std::string("tool calls ") + tool_call_format_name(served.reply_format.tools) +
                              ", reasoning " +
                              (served.parse_reasoning ? reasoning_format_name(served.reply_format.reasoning)
                                                      : "left in content");
  std::printf("[serve] ready on http://%s:%d | model %s | template %s (%s) | %d sessions x %lld tokens | %s\n",
              f.host.c_str(), bound, served.id.c_str(), loaded.tmpl->describe().c_str(), replies.c_str(),
              so.max_decode_sequences,
              static_cast<long long>(so.max_session_tokens), joined_lines(sched->describe()).c_str());
  std::fflush(stdout);

  const int sig = watch.wait();
  const Timer since_signal;
  std::fprintf(stderr, "[serve] shutting down: %d requests in flight, %.1f s grace\n", http.in_flight(),
               f.shutdown_grace_s);
  http.drain();
  sched->shutdown(f.shutdown_grace_s);  // the grace, then the disk tier's write-back
  // Cancelled requests write their last event at once; a client that does not
  // read gets what the margin has left but the close's share (shutdown_watch.h).
  if (!http.wait_idle(server::shutdown_responses_s(f.shutdown_grace_s, since_signal.seconds())))
    std::fprintf(stderr, "[serve] %d responses were still being written\n", http.in_flight());
  http.stop();
  const SchedulerSnapshot s = sched->snapshot();
  std::fprintf(stderr, "[serve] stopped: %llu finished, %llu cancelled, %llu refused, %llu failed\n",
               static_cast<unsigned long long>(s.finished), static_cast<unsigned long long>(s.cancelled),
               static_cast<unsigned long long>(s.refused), static_cast<unsigned long long>(s.failed));
  // As every command that a signal stops: 130 after SIGINT, 143 after SIGTERM
  // (the drain above is what "graceful" means; the code says why it ended).
  return 128 + (sig > 0 ? sig : SIGTERM);
}

}  // namespace og::app
