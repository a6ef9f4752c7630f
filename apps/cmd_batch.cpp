// `offgraph batch`: many independent prompts as concurrent sessions over one
// shared cache through the scheduler (one forward per step for all of them),
// with an optional prefix cache shared by every session. Generation k =
// round * n_prompts + i; its text goes to stdout in order of k (or to
// P_<k>.txt with --out-prefix); the reports go to stderr.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/error.h"
#include "shared_flags.h"
#include "batch_report.h"
#include "commands.h"
#include "base/flags.h"
#include "llm_common.h"
#include "model/config.h"
#include "runtime/chat_images.h"
#include "runtime/engine.h"
#include "runtime/generation_limits.h"
#include "runtime/scheduler.h"
#include "scheduler_flags.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "spec_flags.h"

namespace og::app {

namespace {

struct BatchFlags {
  std::vector<std::string> positional;
  std::string prompts_file, out_prefix, output = "text";
  SchedulerFlags sched;
  int64_t prompt_rounds = 1;
  SpecFlags spec;  // --spec ngram: prompt lookup in every session
  SchedulerSpec sched_spec;
};

const SchedulerFlagNames kSchedulerNames{"max-decode-sequences", "sessions running at once", "prompt"};

struct PromptSpec {
  std::string text;
  int64_t max_new_tokens = -1;  // -1: --max-new-tokens
  // A JSON line's "messages" (and template variables): the whole
  // conversation, read by the HTTP edge's parser; --system is not added.
  std::optional<ChatRequest> chat = std::nullopt;
  std::string where = {};  // "FILE:LINE" of a prompts-file line, for its errors
};

// The JSON line keys a chat request's body shares with a batch line.
const std::set<std::string> kChatKeys = {"messages", "chat_template_kwargs", "reasoning_effort"};

// A JSON line's chat part through the parser of POST /v1/chat/completions
// (server/api_request.h), so that a message array means here what it means
// in a request body, with the same errors.
ChatRequest chat_of_line(const nlohmann::ordered_json& j, const std::string& where) {
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (kChatKeys.count(it.key())) body[it.key()] = it.value();
  try {
    return server::parse_chat_request(body).chat;
  } catch (const server::ApiError& e) {
    fail(where, ": ", e.what());
  }
}

// One prompt per line; a line starting with '{' is a JSON object
// {"prompt": "...", "max_new_tokens": N} or {"messages": [...], ...}.
// Empty lines are skipped.
std::vector<PromptSpec> read_prompts_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--prompts-file: cannot read ", path, ": ", std::strerror(errno));
  std::vector<PromptSpec> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] != '{') {
      out.push_back({line, -1});
      continue;
    }
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, false);
    const std::string where = path + ":" + std::to_string(n);
    if (j.is_discarded() || !j.is_object()) fail(where, ": not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "prompt" && it.key() != "max_new_tokens" && !kChatKeys.count(it.key()))
        fail(where, ": unknown key \"", it.key(),
             "\" (expected \"prompt\" or \"messages\", and optionally \"max_new_tokens\", "
             "\"chat_template_kwargs\", \"reasoning_effort\")");
    PromptSpec p;
    p.where = where;
    if (j.contains("messages")) {
      if (j.contains("prompt")) fail(where, ": give \"prompt\" (text) or \"messages\" (a chat), not both");
      p.chat = chat_of_line(j, where);
    } else {
      if (!j.contains("prompt") || !j["prompt"].is_string()) fail(where, ": \"prompt\" must be a string");
      for (const char* k : {"chat_template_kwargs", "reasoning_effort"})
        if (j.contains(k)) fail(where, ": \"", k, "\" goes with \"messages\" (a chat), not with \"prompt\"");
      p.text = j["prompt"].get<std::string>();
    }
    if (j.contains("max_new_tokens")) {
      const auto& m = j["max_new_tokens"];
      if (!m.is_number_integer()) fail(where, ": \"max_new_tokens\" must be an integer");
      // The bound of --max-new-tokens, a request's max_tokens and the C API's (runtime/generation_limits.h).
      GenerationSettings s;
      s.max_tokens = m.is_number_unsigned() && m.get<uint64_t>() > uint64_t{1} << 62 ? int64_t{1} << 62
                                                                                   : m.get<int64_t>();
      if (const auto v = check_generation_settings(s); !v.empty())
        fail(where, ": ", describe_violation(v[0], "\"max_new_tokens\""));
      p.max_new_tokens = *s.max_tokens;
    }
    out.push_back(std::move(p));
  }
  if (in.bad()) fail("--prompts-file: cannot read ", path, ": ", std::strerror(errno));
  return out;
}

void add_batch_flags(Flags& fl, BatchFlags& b) {
  fl.add_string("prompts-file", &b.prompts_file,
                "prompts, one per line, or JSON lines {\"prompt\": ..., \"max_new_tokens\": ...} or {\"messages\": "
                "[...], ...} (a chat, read as a request body's)",
                "PATH");
  add_scheduler_flags(fl, b.sched, kSchedulerNames);
  add_spec_flags(fl, b.spec);
  fl.add_int("prompt-rounds", &b.prompt_rounds, 1, 1000000,
             "run all prompts this many times, each round on fresh sessions after the previous one (the prefix cache "
             "is kept)");
  fl.add_string("out-prefix", &b.out_prefix,
                "write generation k (k = round * n_prompts + i) to P_<k>.txt instead of stdout", "P");
  fl.add_choice("output", &b.output, {"text", "jsonl"},
                "stdout format: text = generation k's text on line k, with backslash, newline, CR and tab escaped "
                "as \\\\ \\n \\r \\t; jsonl = one JSON object per generation (index, prompt_index, round, text, "
                "tokens, finish_reason)");
}

// One finished (or cancelled) generation as the output shows it.
struct Generation {
  int64_t k = 0, prompt_index = 0, round = 0;
  std::string text;
  int64_t tokens = 0;
  std::string finish_reason;
};

// `text` on one line: backslash, newline, carriage return and tab escaped as
// \\, \n, \r and \t, so that line k of the output is generation k.
std::string output_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

// Writes generations in order of k as they become complete: to stdout as
// text lines or JSON lines (--output), or to P_<k>.txt files (--out-prefix).
class Output {
 public:
  Output(std::string prefix, std::string format) : prefix_(std::move(prefix)), format_(std::move(format)) {}
  void done(Generation g) {
    const int64_t k = g.k;
    pending_[k] = std::move(g);
    while (pending_.count(next_)) {
      write(pending_[next_]);
      pending_.erase(next_++);
    }
  }

 private:
  void write(const Generation& g) {
    if (prefix_.empty()) {
      std::string line;
      if (format_ == "jsonl") {
        nlohmann::json j;
        j["index"] = g.k;
        j["prompt_index"] = g.prompt_index;
        j["round"] = g.round;
        j["text"] = g.text;
        j["tokens"] = g.tokens;
        j["finish_reason"] = g.finish_reason;
        // Text cut inside a UTF-8 sequence (a cancelled generation) is kept, marked, not fatal.
        line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      } else {
        line = output_line(g.text);
      }
      write_stdout_line(line);
      return;
    }
    const std::string path = prefix_ + "_" + std::to_string(g.k) + ".txt";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) fail("--out-prefix: cannot write ", path, ": ", std::strerror(errno));
    const bool ok = std::fwrite(g.text.data(), 1, g.text.size(), f) == g.text.size();
    if (std::fclose(f) != 0 || !ok) fail("--out-prefix: cannot write ", path, ": ", std::strerror(errno));
  }

  std::string prefix_, format_;
  std::map<int64_t, Generation> pending_;
  int64_t next_ = 0;
};

// The conversation of a prompt: a JSON line's messages as given, else the
// --system message (when given) and the prompt as the user's.
ChatRequest chat_request_of(const PromptSpec& p, const std::string& system) {
  if (p.chat) return *p.chat;
  ChatRequest r;
  if (!system.empty()) r.messages.emplace_back().role = "system";
  if (!system.empty()) r.messages.back().content = system;
  r.messages.emplace_back().role = "user";
  r.messages.back().content = p.text;
  return r;
}

// The most bytes one token stands for: a prompt of B bytes needs at least
// B / this many tokens, which refuses a huge line before tokenizing it.
size_t max_token_bytes(const Tokenizer& tok) {
  size_t m = 1;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) m = std::max(m, tok.token_bytes(id).size());
  return m;
}

void write_file(const std::string& path, const std::string& text, const char* flag) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) fail(path, ": cannot write the report (", flag, "): ", std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  if (std::fclose(out) != 0 || !ok) fail(path, ": cannot write the report (", flag, "): ", std::strerror(errno));
}

}  // namespace

int cmd_batch(const Args& args) {
  LlmFlags f;
  BatchFlags b;
  Flags fl = command_flags("batch", "--model M [PROMPT...] [--prompts-file F] [options]");
  add_llm_flags(fl, f, /*run=*/false, /*batch=*/true);
  add_batch_flags(fl, b);
  if (!fl.parse(args, &b.positional)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_llm_flags(fl, f, /*run=*/false);
  if (b.positional.empty() && b.prompts_file.empty()) usage_fail("give prompts as arguments or --prompts-file");
  check_scheduler_flags(b.sched, kSchedulerNames, f.run.cache);
  b.sched_spec = scheduler_spec_of(fl, b.spec);
  if (!b.out_prefix.empty()) {
    // A missing folder is found now, not after the first generation.
    const std::filesystem::path dir = std::filesystem::path(b.out_prefix).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
      fail("--out-prefix: cannot write into ", dir.string(), ": ",
           std::filesystem::exists(dir, ec) ? "not a directory" : "no such directory");
  }
  std::vector<PromptSpec> specs;
  for (const std::string& p : b.positional) specs.push_back({p, -1});
  if (!b.prompts_file.empty())
    for (PromptSpec& p : read_prompts_file(b.prompts_file)) specs.push_back(std::move(p));
  if (specs.empty()) fail("--prompts-file: ", b.prompts_file, " holds no prompts");

  f.run.cache.max_sequences = static_cast<int>(b.sched.sessions + b.sched.prefix_cache_entries);
  const Run run = build_llm_run(f.run);
  const LoadedModel& l = run.loaded;
  const GrammarConstraint grammar = structured_output_of(f, *l.tok);  // --json-schema / --grammar
  SchedulerOptions so = scheduler_options_of(b.sched, run.policy);
  so.spec = b.sched_spec;
  so.image_width = l.model->config().d_model;
  const std::unique_ptr<SchedulerDraft> draft = make_scheduler_draft(b.spec, run, so);  // outlives the scheduler
  if (draft) draft->apply(&so);

  // Every prompt as one og::ChatRequest rendered by plan_chat, as `run`, the
  // server and the library render it. A prompt whose
  // size alone rules it out (more bytes than a session's tokens can stand
  // for) is refused without tokenizing it: a 10 MB line costs nothing.
  const size_t token_bytes = max_token_bytes(*l.tok);
  const ModelChat chat = chat_setup_of(l);  // as serve and the C API assemble it (runtime/model_chat.h)
  const ChatSetup& setup = chat.setup;
  std::vector<std::vector<int32_t>> prompts(specs.size());
  std::vector<std::vector<RequestImage>> images(specs.size());  // a chat line's image_url parts
  ImageCache image_cache;  // an image repeated over lines runs the tower once
  std::vector<std::string> refusals(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const ChatRequest req = chat_request_of(specs[i], f.system);
    size_t bytes = 0;
    for (const ChatRequestMessage& m : req.messages) bytes += m.content.value_or("").size();
    const int64_t at_least = static_cast<int64_t>(bytes / token_bytes);
    if (at_least > so.max_session_tokens) {
      refusals[i] = "the prompt is " + std::to_string(bytes) + " bytes, at least " + std::to_string(at_least) +
                    " tokens, which exceeds the session limit of " + std::to_string(so.max_session_tokens) +
                    " tokens (not tokenized)";
      continue;
    }
    try {
      const ChatSegments segs = plan_chat(req, setup).segments;
      if (chat_images(req).empty()) {
        prompts[i] = encode_chat(*l.tok, segs, true);
      } else {  // through the tower (no tower: a ChatRequestError naming the part)
        const auto encoded = encode_chat_images(req, l.vision.get(), &image_cache);
        ImagePrompt p = image_prompt_of(segs, *l.tok, *l.vision, encoded, true);
        for (size_t k = 0; k < p.images.size(); ++k)
          images[i].push_back(RequestImage{p.images[k].position, encoded[k], p.placeholder, p.bidirectional});
        prompts[i] = std::move(p.tokens);
      }
    } catch (const Error& e) {
      fail(specs[i].where.empty() ? "prompt " + std::to_string(i + 1) : specs[i].where, ": ", e.what());
    }
  }
  ModelEngine engine(*l.model);
  Scheduler sched(engine, *l.tok, run.make_cache(), so);
  diag("%s\n", sched.describe().c_str());
  const SamplerConfig sc = sampler_config_of(f.sampling);
  if (sc.temperature > 0 && f.sampling.seed < 0) diag("[sampler] seed %llu\n", static_cast<unsigned long long>(sc.seed));

  BatchReport report(f.stats == "json", l.load_s);
  Output out(b.out_prefix, b.output);
  install_interrupt_handler(/*restart_reads=*/true);
  const int64_t n = static_cast<int64_t>(specs.size());
  for (int64_t round = 0; round < b.prompt_rounds && !interrupted(); ++round) {
    std::map<int64_t, std::string> texts;
    std::vector<uint64_t> ids;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = round * n + i;
      auto finished = [&, k, i, round](const RequestReport& rep) {
        report.generation(k, rep);
        out.done({k, i, round, texts[k], rep.generated_tokens, finish_reason_name(rep.reason)});
      };
      if (!refusals[i].empty()) {
        RequestReport rep;
        rep.reason = FinishReason::kRefused;
        rep.message = refusals[i];
        finished(rep);
        continue;
      }
      RequestOptions r;
      r.prompt = prompts[i];
      r.images = images[i];
      r.max_new_tokens = specs[i].max_new_tokens >= 0 ? specs[i].max_new_tokens : f.max_new_tokens;
      r.sampler = sc;
      if (!f.ignore_eos) r.stop_ids = l.stop_ids;
      r.stop_strings = f.stop;
      r.grammar = grammar;
      RequestCallbacks cb;
      cb.on_text = [&texts, k](std::string_view piece) { texts[k] += piece; };
      cb.on_finish = finished;
      ids.push_back(sched.submit(std::move(r), std::move(cb)));
    }
    // Steps until idle; SIGINT/SIGTERM cancel what runs or waits (each reported
    // "cancelled", its text so far written) and no later round starts.
    bool cancelled = false;
    while (sched.step()) {
      if (interrupted() && !cancelled) {
        for (uint64_t id : ids) sched.cancel(id);
        cancelled = true;
      }
    }
  }
  const std::string json = report.finish(sched.snapshot(), warnings());
  if (!f.stats_file.empty()) write_file(f.stats_file, json + "\n", "--stats-file");
  if (f.stats == "json" && f.stats_file.empty()) write_stdout_line(json);
  if (interrupted()) {
    std::fputs("[interrupted]\n", stderr);
    return interrupted_exit_code();
  }
  return report.all_ok() ? 0 : 1;
}

}  // namespace og::app
