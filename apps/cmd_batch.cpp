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

#include "base/error.h"
#include "batch_report.h"
#include "commands.h"
#include "base/flags.h"
#include "llm_common.h"
#include "runtime/engine.h"
#include "runtime/scheduler.h"
#include "scheduler_flags.h"

namespace og::app {

namespace {

constexpr int64_t kIntMax = 2147483647;

struct BatchFlags {
  std::vector<std::string> positional;
  std::string prompts_file, out_prefix;
  SchedulerFlags sched;
  int64_t prompt_rounds = 1;
};

const SchedulerFlagNames kSchedulerNames{"max-decode-sequences", "sessions running at once", "prompt"};

struct PromptSpec {
  std::string text;
  int64_t max_new_tokens = -1;  // -1: --max-new-tokens
};

// One prompt per line; a line starting with '{' is a JSON object
// {"prompt": "...", "max_new_tokens": N}. Empty lines are skipped.
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
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const std::string where = path + ":" + std::to_string(n);
    if (j.is_discarded() || !j.is_object()) fail(where, ": not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "prompt" && it.key() != "max_new_tokens")
        fail(where, ": unknown key \"", it.key(), "\" (expected \"prompt\" and optionally \"max_new_tokens\")");
    if (!j.contains("prompt") || !j["prompt"].is_string()) fail(where, ": \"prompt\" must be a string");
    PromptSpec p{j["prompt"].get<std::string>(), -1};
    if (j.contains("max_new_tokens")) {
      const auto& m = j["max_new_tokens"];
      if (!m.is_number_integer() || m.get<int64_t>() < 0 || m.get<int64_t>() > kIntMax)
        fail(where, ": \"max_new_tokens\" must be a whole number in [0, ", kIntMax, "]");
      p.max_new_tokens = m.get<int64_t>();
    }
    out.push_back(std::move(p));
  }
  if (in.bad()) fail("--prompts-file: cannot read ", path, ": ", std::strerror(errno));
  return out;
}

void add_batch_flags(Flags& fl, BatchFlags& b) {
  fl.add_string("prompts-file", &b.prompts_file,
                "prompts, one per line, or JSON lines {\"prompt\": ..., \"max_new_tokens\": ...}", "PATH");
  add_scheduler_flags(fl, b.sched, kSchedulerNames);
  fl.add_int("prompt-rounds", &b.prompt_rounds, 1, 1000000,
             "run all prompts this many times, each round on fresh sessions after the previous one (the prefix cache "
             "is kept)");
  fl.add_string("out-prefix", &b.out_prefix,
                "write generation k (k = round * n_prompts + i) to P_<k>.txt instead of stdout", "P");
}

// Writes generation texts in order of k as they become complete.
class Output {
 public:
  Output(std::string prefix) : prefix_(std::move(prefix)) {}
  void done(int64_t k, std::string text) {
    texts_[k] = std::move(text);
    while (texts_.count(next_)) {
      write(next_, texts_[next_]);
      texts_.erase(next_++);
    }
  }

 private:
  void write(int64_t k, const std::string& text) {
    if (prefix_.empty()) {
      std::printf("%s\n", text.c_str());
      std::fflush(stdout);
      return;
    }
    const std::string path = prefix_ + "_" + std::to_string(k) + ".txt";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) fail("--out-prefix: cannot write ", path, ": ", std::strerror(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) fail("--out-prefix: cannot write ", path, ": ", std::strerror(errno));
  }

  std::string prefix_;
  std::map<int64_t, std::string> texts_;
  int64_t next_ = 0;
};

}  // namespace

int cmd_batch(const Args& args) {
  LlmFlags f;
  BatchFlags b;
  Flags fl("batch", "--model M [PROMPT...] [--prompts-file F] [options]");
  add_llm_flags(fl, f, /*run=*/false, /*batch=*/true);
  add_batch_flags(fl, b);
  if (!fl.parse(args, &b.positional)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_llm_flags(fl, f, /*run=*/false);
  if (b.positional.empty() && b.prompts_file.empty()) usage_fail("give prompts as arguments or --prompts-file");
  check_scheduler_flags(b.sched, kSchedulerNames, f.run.cache);
  if (!b.out_prefix.empty()) {
    // A missing folder is found now, not after the first generation.
    const std::filesystem::path dir = std::filesystem::path(b.out_prefix).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
      fail("--out-prefix: cannot write into ", dir.string(), ": no such directory");
  }
  std::vector<PromptSpec> specs;
  for (const std::string& p : b.positional) specs.push_back({p, -1});
  if (!b.prompts_file.empty())
    for (PromptSpec& p : read_prompts_file(b.prompts_file)) specs.push_back(std::move(p));
  if (specs.empty()) fail("--prompts-file: ", b.prompts_file, " holds no prompts");

  f.run.cache.max_sequences = static_cast<int>(b.sched.sessions + b.sched.prefix_cache_entries);
  const Run run = build_llm_run(f.run);
  const LoadedModel& l = run.loaded;
  const SchedulerOptions so = scheduler_options_of(b.sched, run.policy.max_capacity);

  // Every prompt through the chat template, as `run` renders it.
  std::vector<std::vector<int32_t>> prompts;
  for (const PromptSpec& p : specs) {
    std::vector<ChatMessage> messages;
    if (!f.system.empty()) messages.push_back({"system", f.system});
    messages.push_back({"user", p.text});
    prompts.push_back(encode_chat(*l.tok, l.tmpl->render_segments(messages, true), true));
  }
  ModelEngine engine(*l.model);
  Scheduler sched(engine, *l.tok, run.make_cache(), so);
  std::fprintf(stderr, "%s\n", sched.describe().c_str());
  const SamplerConfig sc = sampler_config_of(f.sampling);
  if (sc.temperature > 0 && f.sampling.seed < 0)
    std::fprintf(stderr, "[sampler] seed %llu\n", static_cast<unsigned long long>(sc.seed));

  BatchReport report(f.stats == "json", l.load_s);
  Output out(b.out_prefix);
  const int64_t n = static_cast<int64_t>(specs.size());
  for (int64_t round = 0; round < b.prompt_rounds; ++round) {
    std::map<int64_t, std::string> texts;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = round * n + i;
      RequestOptions r;
      r.prompt = prompts[i];
      r.max_new_tokens = specs[i].max_new_tokens >= 0 ? specs[i].max_new_tokens : f.max_new_tokens;
      r.sampler = sc;
      r.stop_ids = l.stop_ids;
      r.stop_strings = f.stop;
      RequestCallbacks cb;
      cb.on_text = [&texts, k](std::string_view piece) { texts[k] += piece; };
      cb.on_finish = [&, k](const RequestReport& rep) {
        report.generation(k, rep);
        out.done(k, texts[k]);
      };
      sched.submit(std::move(r), std::move(cb));
    }
    sched.run_until_idle();
  }
  report.finish(sched.snapshot());
  return report.all_ok() ? 0 : 1;
}

}  // namespace og::app
