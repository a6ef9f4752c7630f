// Hostile templates against the render's bounds (RenderOptions): every one of
// these ran for minutes or built gigabytes before the work meter (issue 50).
// Each must end within a second or two with the engine's one-line error.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <atomic>
#include <thread>
#include <optional>

#include <pthread.h>

#include "template/meter.h"
#include "template/template.h"

namespace og::jinja {
namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  std::string error;  // "" when the render succeeded
  double seconds = 0;
};

Outcome run(const std::string& src, const RenderOptions& opt = {}) {
  Outcome o;
  auto t0 = Clock::now();
  try {
    Template::parse(src).render(value_from_json(nlohmann::ordered_json::object()), opt);
  } catch (const Error& e) {
    o.error = e.what();
  }
  o.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return o;
}

// Fails within `seconds` with one line naming `limit`.
void expect_bounded(const std::string& src, const std::string& limit, const RenderOptions& opt = {},
                    double seconds = 8) {
  Outcome o = run(src, opt);
  EXPECT_NE(o.error.find(limit), std::string::npos) << src.substr(0, 120) << "\n -> " << o.error.substr(0, 300);
  EXPECT_EQ(o.error.find('\n'), std::string::npos) << o.error.substr(0, 300);
  EXPECT_LT(o.error.size(), 1000u) << o.error.substr(0, 300);
  EXPECT_LT(o.seconds, seconds) << src.substr(0, 120);
}

// A list of n items held 100 times: 100 n elements behind each use.
std::string shared(int n) {
  return "{% set l0 = range(" + std::to_string(n) +
         ")|list %}{% set ns = namespace(a=[]) %}{% for i in range(100) %}{% set ns.a = ns.a + [l0] %}{% endfor %}";
}

// Bounds 16 times below the defaults: the same mechanisms at a fraction of the
// work, so the tests stay quick on a loaded machine. The probe's own templates
// run under the defaults (any of their bounds may stop them: "giving up").
RenderOptions small() {
  RenderOptions o;
  o.max_output_bytes = 1 << 20;
  o.max_work = 64 << 20;
  o.max_memory_bytes = 16 << 20;
  return o;
}

TEST(JinjaLimits, TheProbesTemplatesEndUnderTheDefaults) {
  // 1 million comparisons of 10 million elements each: minutes before.
  expect_bounded(shared(100000) +
                     "{% set w = [ns.a] %}{% for i in range(1000) %}{% for j in range(1000) %}"
                     "{% if w == w %}{% endif %}{% endfor %}{% endfor %}",
                 "giving up", {}, 30);  // the budget, or the 10 s deadline on a slow (sanitizer) build
  // 689 MB of JSON text, 8 million split values: refused at 16 MiB.
  expect_bounded(shared(100000) + "{{ ns.a|tojson }}", "grows beyond 16777216 bytes");
  expect_bounded("{% set s = 'x,' * 8000000 %}{{ s.split(',')|length }}", "grows beyond 16777216 bytes");
}

TEST(JinjaLimits, DeepComparisonsAreCharged) {
  for (const char* cond :
       {"w == w", "w != w", "l0 in ns.a", "ns.a in w", "ns.a < ns.a", "w is eq(w)", "w is in([w])"})
    expect_bounded(shared(5000) + "{% set w = [ns.a] %}{% for i in range(1000) %}{% if " + cond +
                       " %}{% endif %}{% endfor %}",
                   "work budget", small());
}

TEST(JinjaLimits, FiltersAndMethodsAreCharged) {
  for (const char* expr :
       {"ns.a|unique|list", "ns.a|sort", "ns.a.count(l0)", "ns.a.count(l0[:-1] + [-1])", "ns.a|max"})
    expect_bounded(shared(5000) + "{% for i in range(1000) %}{% set x = " + expr + " %}{% endfor %}", "work budget",
                   small());
}

TEST(JinjaLimits, InterpreterStepsAreCharged) {
  // 2^60 macro calls within the depth bound, each one cheap.
  expect_bounded("{% macro f(n) %}{% if n < 60 %}{{ f(n+1) }}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}",
                 "work budget", small());
  // Under the defaults the budget (~1.5 s of CPU in a Release build) or, in a
  // slower sanitizer build, the 10 s deadline ends it: either is "giving up".
  expect_bounded("{% macro f(n) %}{% if n < 60 %}{{ f(n+1) }}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}",
                 "giving up", {}, 30);
}

TEST(JinjaLimits, LiveValuesAreCounted) {
  // 100 copies of a 5000-item list (640 KB each) held at once.
  expect_bounded(shared(5000) + "{% set ns.b = [] %}{% for x in ns.a %}{% set ns.b = ns.b + [x|list] %}{% endfor %}",
                 "bytes of memory", small());
  expect_bounded(shared(5000) + "{{ (ns.a|map('list'))|list|length }}", "bytes of memory", small());
  // Output buffers of unfinished macro calls: 16 nested calls holding 1 MB each.
  expect_bounded("{% macro f(n) %}{{ 'x' * 1000000 }}{% if n < 16 %}{{ f(n + 1) }}{% endif %}{% endmacro %}"
                 "{{ f(0)|length }}",
                 "bytes of memory", small());
  // Copies that are freed again do not add up.
  EXPECT_EQ(run(shared(5000) + "{% for x in ns.a %}{% set y = x|list %}{% endfor %}", small()).error, "");
}

TEST(JinjaLimits, StringsFromSharedListsStopAtTheSizeBound) {
  // Each would be 3.4 MB of text from a value the render holds once.
  for (const char* expr : {"ns.a|tojson", "ns.a|tojson(indent=100)", "ns.a|string", "ns.a|pprint", "ns.a|join(',')",
                           "ns.a ~ ''", "'%s' % [ns.a]", "'{}'.format(ns.a)", "[ns.a]|join"})
    expect_bounded(shared(5000) + "{{ " + expr + " }}", "grows beyond 1048576 bytes", small());
}

TEST(JinjaLimits, BigOutputsAreRefusedBeforeTheyAreBuilt) {
  const std::string s = "{% set s = 'x,' * 500000 %}";  // 1,000,000 bytes
  for (const char* expr : {"s.split(',')|length",  // 500000 values
                           "s.rsplit(',')|length", "s.replace(',', ' ').split()|length",
                           "s.replace(',', '\\n').splitlines()|length",
                           "s|list|length",  // a value a character
                           "([s] * 100)|join", "''.join([s] * 100)", "(s ~ s)|length", "s.replace(',', s)|length",
                           "('%s' * 100) % ((s,) * 100)", "('\\n' * 100000)|indent(1000, blank=true)|length",
                           "[1]|batch(1000000000000, fill_with=0)|list", "[1, 2] * 1000000000000",
                           "([1] * 5000) + ([1] * 5000)",
                           // a repeat count whose byte size wraps around 2^64 is still too big
                           "'abcd' * 4611686018427387905"})
    expect_bounded(s + "{{ " + expr + " }}", "grows beyond", small());
  expect_bounded(s + "{% for c in s %}{% endfor %}", "grows beyond", small());
  // Repeating nothing many times is nothing, at once.
  EXPECT_EQ(run("{{ '' * 1000000000000000000 }}{{ [] * 1000000000000000000 }}").error, "");
}

TEST(JinjaLimits, HostileSubstringSearchIsCharged) {
  // 'aaa...ab' in 'aaa...a' compares n * m bytes with a plain find.
  RenderOptions opt;
  opt.max_work = 50'000'000;
  const std::string s = "{% set h = 'a' * 4000000 %}{% set n = 'a' * 2000000 ~ 'b' %}";
  for (const char* expr : {"n in h", "h.find(n)", "h.rfind(n)", "h.count(n)", "h.split(n)", "h.rsplit(n)",
                           "h.replace(n, '')"})
    expect_bounded(s + "{{ " + expr + " }}", "work budget", opt);
}

TEST(JinjaLimits, WallClockDeadline) {
  // A render cheap in work units per step but long: the deadline stops it.
  RenderOptions opt;
  opt.max_work = int64_t{1} << 50;
  opt.max_render_ms = 100;
  expect_bounded(shared(100000) + "{% set w = [ns.a] %}{% for i in range(1000) %}{% if w == w %}{% endif %}{% endfor %}",
                 "time limit (100 ms)", opt);
}

TEST(JinjaLimits, DefaultsLeaveOrdinaryWorkAlone) {
  // The largest things jinja2's sandbox allows stay possible under the default
  // work and memory bounds. The wall-clock deadline is left out: it measures the
  // machine (these take 1.5 s in Release, ~10 s under ASan), not the bounds.
  RenderOptions o;
  o.max_render_ms = 0;
  EXPECT_EQ(run("{{ range(100000)|list|length }}", o).error, "");
  EXPECT_EQ(run("{{ ('x' * 16000000)|length }}", o).error, "");
  EXPECT_EQ(run("{% set s = 'a b ' * 50000 %}{{ s.split()|length }}{{ s.split(' ')|length }}", o).error, "");
  EXPECT_EQ(run("{% for i in range(300) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", o).error, "");
}

TEST(JinjaLimits, ManyVariablesAreIndexed) {
  // 100,000 top-level variables (chat_template_kwargs keys): each was a scan of
  // all the others when set and when looked up, 5e9 string compares.
  Dict vars;  // built directly: an ordered_json object is itself quadratic in its keys
  for (int i = 0; i < 100000; ++i) vars.items.emplace_back(Value("k" + std::to_string(i)), Value(i));
  const Value v = Value::dict(std::move(vars));
  auto t0 = Clock::now();
  std::string out = Template::parse("{% for i in range(1000) %}{{ k99999 }}{% set k99999 = i %}{% endfor %}{{ k5 }}")
                        .render(v);
  EXPECT_EQ(out.substr(out.size() - 6), "999995");  // a set inside a loop stays in its iteration
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 3);
}

// The hostile seeds of the Jinja fuzzer (fuzz/corpus/fuzz_jinja/hostile_*) end
// with an error under the fuzzer's own bounds.
TEST(JinjaLimits, FuzzSeedsEndWithErrors) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(OG_SOURCE_DIR) / "fuzz/corpus/fuzz_jinja";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  RenderOptions fuzz;
  fuzz.max_loop_iterations = 20000;
  fuzz.max_output_bytes = 256 << 10;
  fuzz.max_memory_bytes = 32 << 20;
  int seeds = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("hostile_", 0) != 0) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    Outcome o = run(text.str(), fuzz);
    EXPECT_NE(o.error, "") << entry.path();
    EXPECT_LT(o.error.size(), 1000u) << entry.path();
    EXPECT_LT(o.seconds, 8) << entry.path();
    ++seeds;
  }
  EXPECT_GE(seeds, 7);
}

TEST(JinjaLimits, ACancelledRenderStopsWithinItsPoll) {
  // A server's render for a client that left: the CancelCheck of its thread
  // says so, and the render stops within a poll (10 ms) instead of running to
  // its budget or deadline (here: none).
  RenderOptions opt;
  opt.max_work = int64_t{1} << 50;
  opt.max_render_ms = 0;
  std::atomic<bool> gone{false};
  Clock::time_point left;
  std::thread client([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = Clock::now();
    gone = true;
  });
  std::string error;
  {
    const CancelCheck cancel([&] { return gone.load(); });
    try {
      Template::parse(shared(100000) + "{% set w = [ns.a] %}{% for i in range(1000) %}{% if w == w %}{% endif %}"
                                       "{% endfor %}")
          .render(value_from_json(nlohmann::ordered_json::object()), opt);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  const auto stopped = Clock::now();
  client.join();
  EXPECT_NE(error.find("the render was cancelled"), std::string::npos) << error;
  // A poll is 10 ms; the bound leaves room for a loaded machine under ASan (the render
  // itself would run for many seconds).
  EXPECT_LT(std::chrono::duration<double>(stopped - left).count(), 1.0);
  // Without a CancelCheck (it is gone with its scope) nothing is polled.
  EXPECT_EQ(run("{{ range(10)|list|length }}", opt).error, "");
}

TEST(JinjaLimits, TheProcessLimitsAreTheDefaults) {
  // What a command's --template-max-* flags set: every RenderOptions made
  // afterwards starts from them.
  const RenderLimits saved = render_limits();
  RenderLimits l = saved;
  l.max_output_bytes = 4096;
  l.max_work = 100000;
  set_render_limits(l);
  const RenderOptions o;
  set_render_limits(saved);
  EXPECT_EQ(o.max_output_bytes, 4096);
  EXPECT_EQ(o.max_work, 100000);
  EXPECT_NE(run("{{ 'x' * 5000 }}", o).error.find("4096 bytes"), std::string::npos);
  EXPECT_NE(run("{% for i in range(20000) %}{% endfor %}", o).error.find("work budget (100000 units)"),
            std::string::npos);
  EXPECT_EQ(RenderOptions{}.max_output_bytes, 16 << 20);
}

}  // namespace
}  // namespace og::jinja

namespace og::jinja {
namespace {

// Deep expressions inside deep macro recursion: the nesting bound times the
// call-depth bound needed more than 2 MiB of C++ stack (a crash on a 2 MiB
// thread); the render's stack bound (kMaxRenderStackBytes) stops it first.
TEST(JinjaLimits, DeepExpressionsInDeepRecursionFitAThreadStack) {
  // The deepest expression the parser accepts around the recursive call.
  std::optional<Template> t;
  for (int k = 256; !t && k > 0; k -= 8) {
    std::string deep = "f(n + 1)";
    for (int i = 0; i < k; ++i) deep = "(-" + deep + ")";
    try {
      t = Template::parse("{% macro f(n) %}{{ " + deep + " }}{% endmacro %}{{ f(0) }}");
    } catch (const Error&) {
    }
  }
  ASSERT_TRUE(t.has_value());
  std::string error;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 2 << 20);
  struct Job {
    const Template* t;
    std::string* error;
  } job{&*t, &error};
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, &attr, [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    try {
      j->t->render(value_from_json(nlohmann::ordered_json::object()));
    } catch (const Error& e) {
      *j->error = e.what();
    }
    return nullptr;
  }, &job), 0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_NE(error.find("recurses too deeply"), std::string::npos) << error;
}

}  // namespace
}  // namespace og::jinja
