// Hostile templates against the render's bounds (RenderOptions): every one of
// these ran for minutes or built gigabytes before the work meter (issue 50).
// Each must end within a second or two with the engine's one-line error.
#include <gtest/gtest.h>

#include <chrono>

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

// One list of 100000 items held 100 times: 10 million elements behind each use.
const std::string kShared =
    "{% set l0 = range(100000)|list %}{% set ns = namespace(a=[]) %}"
    "{% for i in range(100) %}{% set ns.a = ns.a + [l0] %}{% endfor %}";

TEST(JinjaLimits, DeepComparisonsAreCharged) {
  // The probe's template: 1 million comparisons of 10 million elements each.
  expect_bounded(kShared +
                     "{% set w = [ns.a] %}{% for i in range(1000) %}{% for j in range(1000) %}"
                     "{% if w == w %}{% endif %}{% endfor %}{% endfor %}",
                 "work budget");
  for (const char* cond : {"w != w", "l0 in ns.a", "ns.a in w", "ns.a < ns.a", "w is eq(w)", "w is in([w])"})
    expect_bounded(kShared + "{% set w = [ns.a] %}{% for i in range(1000) %}{% if " + cond + " %}{% endif %}{% endfor %}",
                   "work budget");
}

TEST(JinjaLimits, FiltersAndMethodsAreCharged) {
  for (const char* expr : {"ns.a|unique|list", "ns.a|sort", "ns.a.count(l0)",
                           "ns.a.count(l0[:-1] + [-1])", "ns.a|max"})
    expect_bounded(kShared + "{% for i in range(1000) %}{% set x = " + expr + " %}{% endfor %}", "work budget");
}

TEST(JinjaLimits, LiveValuesAreCounted) {
  // 100 copies of a 100000-item list (12.8 MB each) are held at once.
  expect_bounded(kShared + "{% set ns.b = [] %}{% for x in ns.a %}{% set ns.b = ns.b + [x|list] %}{% endfor %}",
                 "bytes of memory");
  expect_bounded(kShared + "{{ (ns.a|map('list'))|list|length }}", "bytes of memory");
  // Copies that are freed again do not add up.
  EXPECT_EQ(run(kShared + "{% for x in ns.a[:20] %}{% set y = x|list %}{% endfor %}").error, "");
}

TEST(JinjaLimits, StringsFromSharedListsStopAtTheSizeBound) {
  // tojson / string / join / repr of the shared list would be 689 MB of text.
  for (const char* expr : {"ns.a|tojson", "ns.a|tojson(indent=100)", "ns.a|string", "ns.a|pprint", "ns.a|join(',')",
                           "ns.a ~ ''", "'%s' % [ns.a]", "'{}'.format(ns.a)", "[ns.a]|join"})
    expect_bounded(kShared + "{{ " + expr + " }}", "grows beyond");
}

TEST(JinjaLimits, BigOutputsAreRefusedBeforeTheyAreBuilt) {
  const std::string s = "{% set s = 'x,' * 8000000 %}";
  expect_bounded(s + "{{ s.split(',')|length }}", "grows beyond");   // 8 million values
  expect_bounded(s + "{{ s.rsplit(',')|length }}", "grows beyond");
  expect_bounded(s + "{{ s.replace(',', ' ').split()|length }}", "grows beyond");
  expect_bounded(s + "{{ s.replace(',', '\\n').splitlines()|length }}", "grows beyond");
  expect_bounded(s + "{{ s|list|length }}", "grows beyond");  // a value a character
  expect_bounded(s + "{% for c in s %}{% endfor %}", "grows beyond");
  expect_bounded(s + "{{ ([s] * 100)|join }}", "grows beyond");
  expect_bounded(s + "{{ ''.join([s] * 100) }}", "grows beyond");
  expect_bounded(s + "{{ (s ~ s)|length }}", "grows beyond");
  expect_bounded(s + "{{ s.replace(',', s)|length }}", "grows beyond");
  expect_bounded(s + "{{ ('%s' * 100) % ((s,) * 100) }}", "grows beyond");
  expect_bounded("{{ ('\\n' * 1000000)|indent(1000, blank=true)|length }}", "grows beyond");
  expect_bounded("{{ [1]|batch(1000000000000, fill_with=0)|list }}", "grows beyond");
  expect_bounded("{{ [1, 2] * 1000000000000 }}", "grows beyond");
  expect_bounded("{{ ([1] * 100000) + ([1] * 100000) }}", "grows beyond");
  // A repeat count whose byte size wraps around 2^64 is still too big.
  expect_bounded("{{ 'abcd' * 4611686018427387905 }}", "grows beyond");
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
  expect_bounded(kShared + "{% set w = [ns.a] %}{% for i in range(1000) %}{% if w == w %}{% endif %}{% endfor %}",
                 "time limit (100 ms)", opt, 2);
}

TEST(JinjaLimits, DefaultsLeaveOrdinaryWorkAlone) {
  // The largest things jinja2's sandbox allows stay possible.
  EXPECT_EQ(run("{{ range(100000)|list|length }}").error, "");
  EXPECT_EQ(run("{{ ('x' * 16000000)|length }}").error, "");
  EXPECT_EQ(run("{% set s = 'a b ' * 50000 %}{{ s.split()|length }}{{ s.split(' ')|length }}").error, "");
  EXPECT_EQ(run("{% for i in range(999) %}{% for j in range(1000) %}{% endfor %}{% endfor %}").error, "");
}

}  // namespace
}  // namespace og::jinja
