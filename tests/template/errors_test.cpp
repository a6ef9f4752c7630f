// Errors of the Jinja engine: each is an og::Error naming the template line,
// never a crash or a hang, including on hostile input and exceeded bounds.
#include <gtest/gtest.h>

#include "template/template.h"

namespace og::jinja {
namespace {

using Json = nlohmann::ordered_json;

// The message of the og::Error that parsing or rendering src throws ("" if none).
std::string error_of(const std::string& src, const Json& vars = Json::object(), const RenderOptions& opt = {}) {
  try {
    Template::parse(src).render(value_from_json(vars), opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JinjaErrors, SyntaxErrorNamesTheLine) {
  EXPECT_EQ(error_of("a\nb\n{% if %}").rfind("line 3: ", 0), 0u) << error_of("a\nb\n{% if %}");
  // An unexpected end is reported on the line of the last token, as jinja2 does.
  EXPECT_EQ(error_of("{% for x in y %}\n\nx").rfind("line 2: ", 0), 0u) << error_of("{% for x in y %}\n\nx");
  EXPECT_NE(error_of("{% for x in y %}").find("endfor"), std::string::npos);
  EXPECT_NE(error_of("{{ 'abc }}").find("line 1: "), std::string::npos);
  EXPECT_NE(error_of("{# never closed").find("comment"), std::string::npos);
  EXPECT_NE(error_of("{% include 'x' %}").find("unknown tag"), std::string::npos);
  EXPECT_NE(error_of("{{ (1 }}").find("line 1"), std::string::npos);
}

TEST(JinjaErrors, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(error_of("ok\n{{ u.x }}"), "line 2: 'u' is undefined");
  EXPECT_EQ(error_of("{{ d.a.b }}", {{"d", Json::object()}}), "line 1: 'dict object' has no attribute 'a'");
  EXPECT_NE(error_of("{{ 'a' < 1 }}").find("not supported"), std::string::npos);
  EXPECT_NE(error_of("{{ u + 1 }}").find("'u' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 // 0 }}").find("division"), std::string::npos);
  EXPECT_NE(error_of("{{ none | length }}").find("len()"), std::string::npos);
  EXPECT_NE(error_of("{{ nope() }}").find("'nope' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{% for a, b in [1] %}{% endfor %}").find("unpack"), std::string::npos);
}

TEST(JinjaErrors, RaiseExceptionMessageIsVerbatim) {
  EXPECT_EQ(error_of("x\n\n{{ raise_exception('Roles must alternate user/assistant!') }}"),
            "line 3: Roles must alternate user/assistant!");
}

TEST(JinjaErrors, SandboxRefusesMutationAndDunders) {
  EXPECT_NE(error_of("{% set l = [] %}{{ l.append(1) }}").find("unsafe"), std::string::npos);
  EXPECT_NE(error_of("{% set d = {} %}{{ d.update({'a': 1}) }}").find("unsafe"), std::string::npos);
  EXPECT_EQ(error_of("{{ ''.__class__ }}{{ {}.__class__ }}"), "");
  EXPECT_NE(error_of("{{ ''.__class__.__mro__ }}").find("unsafe"), std::string::npos);
}

TEST(JinjaErrors, LoopIterationBound) {
  RenderOptions opt;
  opt.max_loop_iterations = 1000;
  EXPECT_NE(error_of("{% for i in range(10) %}{% for j in range(200) %}{% endfor %}{% endfor %}", Json::object(), opt)
                .find("loop iterations"),
            std::string::npos);
  EXPECT_EQ(error_of("{% for i in range(1000) %}{% endfor %}", Json::object(), opt), "");
  // As jinja2's sandbox, range() refuses more than 100000 items.
  EXPECT_EQ(error_of("{{ range(100000) | length }}"), "");
  EXPECT_NE(error_of("{{ range(100001) | length }}").find("Range too big"), std::string::npos);
}

TEST(JinjaErrors, OutputBound) {
  RenderOptions opt;
  opt.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(100) %}0123456789x{% endfor %}", Json::object(), opt).find("bytes"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 5000 }}", Json::object(), opt).find("bytes"), std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                     Json::object(), opt)
                .find("bytes"),
            std::string::npos);
}

TEST(JinjaErrors, WorkBound) {
  // Each iteration is cheap to count but copies a large string: the work budget stops it.
  RenderOptions opt;
  opt.max_output_bytes = 1 << 16;
  std::string e = error_of(
      "{% set s = 'x' * 60000 %}{% for i in range(300) %}{% for j in range(300) %}{% set t = s.upper() %}"
      "{% endfor %}{% endfor %}",
      Json::object(), opt);
  EXPECT_NE(e.find("work budget"), std::string::npos) << e;
}

TEST(JinjaErrors, RecursionDepthBound) {
  std::string e = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(e.find("recursion depth"), std::string::npos) << e;
}

TEST(JinjaErrors, DeepNestingIsAnErrorNotACrash) {
  const int n = 100000;
  for (const std::string& src : {"{{ " + std::string(n, '(') + "1" + std::string(n, ')') + " }}",
                                 "{{ " + std::string(n, '[') + std::string(n, ']') + " }}",
                                 "{{ 1" + [&] { std::string s; for (int i = 0; i < n; ++i) s += "+1"; return s; }() + " }}",
                                 "{{ x" + [&] { std::string s; for (int i = 0; i < n; ++i) s += ".a"; return s; }() + " }}",
                                 "{{ x" + [&] { std::string s; for (int i = 0; i < n; ++i) s += "|e"; return s; }() + " }}",
                                 "{{ " + [&] { std::string s; for (int i = 0; i < n; ++i) s += "not "; return s; }() + "1 }}",
                                 [&] { std::string s; for (int i = 0; i < n; ++i) s += "{% if x %}"; return s; }(),
                                 "{% if a %}" + [&] { std::string s; for (int i = 0; i < n; ++i) s += "{% elif a %}"; return s; }() + "{% endif %}"}) {
    std::string e = error_of(src);
    EXPECT_NE(e.find("nests deeper"), std::string::npos) << src.substr(0, 40) << " -> " << e;
  }
}

TEST(JinjaErrors, DeepOrSelfContainingValuesAreErrors) {
  EXPECT_NE(error_of("{% set ns = namespace(x=[]) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .find("nest deeper"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("contains itself"),
            std::string::npos);
  Json deep = Json::array();
  for (int i = 0; i < 1000; ++i) deep = Json::array({deep});
  EXPECT_THROW(value_from_json(deep), Error);
}

}  // namespace
}  // namespace og::jinja
