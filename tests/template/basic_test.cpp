// Unit tests of the Jinja engine: each feature renders as jinja2 renders it
// (the oracle test checks the same against jinja2 itself, over many more cases).
#include <gtest/gtest.h>

#include "template/template.h"
#include "template/text.h"

namespace og::jinja {
namespace {

using Json = nlohmann::ordered_json;

std::string render(const std::string& src, const Json& vars = Json::object(), const RenderOptions& opt = {}) {
  return Template::parse(src).render(value_from_json(vars), opt);
}

TEST(JinjaBasic, TextAndOutput) {
  EXPECT_EQ(render("hello {{ name }}!", {{"name", "world"}}), "hello world!");
  EXPECT_EQ(render("{{ 1 + 2 }}|{{ 'a' ~ 1 }}|{{ none }}|{{ true }}|{{ [1, 'a'] }}|{{ {'a': 1} }}"),
            "3|a1|None|True|[1, 'a']|{'a': 1}");
  EXPECT_EQ(render("a\nb\n"), "a\nb");  // one trailing newline is dropped, as jinja2 does
}

TEST(JinjaBasic, WhitespaceControl) {
  EXPECT_EQ(render("a  {{- 1 -}}  b"), "a1b");
  EXPECT_EQ(render("x {%- if true -%} y {%- endif -%} z"), "xyz");
  EXPECT_EQ(render("a {#- c -#} b"), "ab");
  // trim_blocks drops the newline after a tag, lstrip_blocks the indentation before it.
  EXPECT_EQ(render("<\n  {% if true %}\n  x\n  {% endif %}\n>"), "<\n  x\n>");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(JinjaBasic, PythonRepr) {
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(1.0), "1.0");
  EXPECT_EQ(py_float_repr(1e-5), "1e-05");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(123456789.0), "123456789.0");
  EXPECT_EQ(py_float_repr(0.30000000000000004), "0.30000000000000004");
  EXPECT_EQ(py_float_repr(-0.0), "-0.0");
  EXPECT_EQ(py_float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(py_str_repr("it's"), "\"it's\"");
  EXPECT_EQ(py_str_repr("a'b\"c\n"), "'a\\'b\"c\\n'");
  EXPECT_EQ(py_str_repr("é\x01"), "'é\\x01'");
}

TEST(JinjaControl, IfAndFor) {
  EXPECT_EQ(render("{% for i in [0,1,2,3] %}{% if i == 0 %}z{% elif i is odd %}o{% else %}e{% endif %}{% endfor %}"),
            "zoeo");
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.cycle('p', 'q') }};{% endfor %}"),
            "1021TrueFalse2p;2110FalseTrue2q;");
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }},{% endfor %}"), "-2,1-3,2-,");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ loop.index }}{{ x }}{% endfor %}"), "1224");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}{{ v }}{% endfor %}"), "a1b2");
  EXPECT_EQ(render("{% for x in range(9) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "023");
}

TEST(JinjaControl, SetScopesAndNamespace) {
  // A set inside a loop does not leak out of the iteration; a namespace carries state.
  EXPECT_EQ(render("{% set x = 0 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}"), "120");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1,2] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "3");
  EXPECT_EQ(render("{% set b %}A{{ 1 }}{% endset %}{{ b }}{% set c | upper %}x{% endset %}{{ c }}"), "A1X");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
}

TEST(JinjaControl, MacrosCallAndFilterBlocks) {
  EXPECT_EQ(render("{% macro m(a, b='d') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, b=2) }}"), "1d12");
  EXPECT_EQ(render("{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}in{% endcall %}"), "[in]");
  EXPECT_EQ(render("{% macro e(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
                   "{% call(v) e([1,2]) %}<{{ v }}>{% endcall %}"),
            "<1><2>");
  EXPECT_EQ(render("{% filter upper %}ab{% endfilter %}"), "AB");
  EXPECT_EQ(render("{% generation %}gen{% endgeneration %}"), "gen");
}

TEST(JinjaExpr, LiteralsOperatorsAndAccess) {
  EXPECT_EQ(render("{{ 'a\\'b\\n' }}{{ \"\\u00e9\" }}{{ 'x' 'y' }}"), "a'b\néxy");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 3 }} {{ 'ab' * 2 }}"),
            "3 -4 2 3.5 8 abab");
  EXPECT_EQ(render("{{ [1,2,3][::-1] }}{{ [1,2,3][1:] }}{{ 'héllo'[1:3] }}{{ 'abc'[-1] }}"), "[3, 2, 1][2, 3]élc");
  EXPECT_EQ(render("{{ d.k }}{{ d['k'] }}{{ d.l.0 }}{{ d.missing }}{{ d.__class__ }}", {{"d", {{"k", 1}, {"l", {7}}}}}),
            "117");
  EXPECT_EQ(render("{{ 1 in [1] }}{{ 2 not in [1] }}{{ 'b' in 'abc' }}{{ 'k' in {'k': 1} }}"), "TrueTrueTrueTrue");
  EXPECT_EQ(render("{{ 0 or 'x' }}{{ 1 and 'y' }}{{ not [] }}{{ 'a' if false else 'b' }}"), "xyTrueb");
  EXPECT_EQ(render("{{ 1 < 2 < 3 }}{{ 1 == 1.0 }}{{ true == 1 }}"), "TrueTrueTrue");
}

TEST(JinjaExpr, Tests) {
  EXPECT_EQ(render("{{ u is defined }}{{ u is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}"
                   "{{ 1 is integer }}{{ 1.0 is float }}{{ {} is mapping }}{{ [] is iterable }}{{ [] is sequence }}"
                   "{{ true is boolean }}{{ 4 is divisibleby 2 }}{{ 1 is eq 1 }}{{ 'ab' is lower }}{{ x is not none }}"),
            "FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrue");
}

TEST(JinjaExpr, MethodsAndFilters) {
  EXPECT_EQ(render("{{ ' x '.strip() }}{{ 'xax'.strip('x') }}{{ 'a,b'.split(',') }}{{ 'a b c'.split(None, 1) }}"
                   "{{ 'ab'.startswith(('x', 'a')) }}{{ 'aXa'.replace('a', 'b') }}"),
            "xa['a', 'b']['a', 'b c']TruebXb");
  EXPECT_EQ(render("{{ d | tojson }}", {{"d", {{"é", {1, 2.5, nullptr}}}}}), "{\"é\": [1, 2.5, null]}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(indent=2, sort_keys=true) }}"), "{\n  \"a\": 2,\n  \"b\": 1\n}");
  EXPECT_EQ(render("{{ [1,2] | join('-') }}{{ [3,1,2] | sort }}{{ [1,2] | first }}{{ [1,2] | last }}"
                   "{{ 'abc' | length }}{{ u | default('d') }}{{ '' | default('e', true) }}{{ [1,1,2] | unique | list }}"),
            "1-2[1, 2, 3]123de[1, 2]");
  EXPECT_EQ(render("{{ xs | map(attribute='n') | list }}{{ xs | selectattr('n', 'equalto', 2) | list }}",
                   {{"xs", {{{"n", 1}}, {{"n", 2}}}}}),
            "[1, 2][{'n': 2}]");
  EXPECT_EQ(render("{{ 'a\\nb' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}"), "a\n  b|  a\n  b");
  EXPECT_EQ(render("{{ '%s=%d' | format('x', 3) }}{{ '<a>' | e }}{{ 3.7 | int }}{{ '2.5' | float }}{{ 2.5 | round }}"),
            "x=3&lt;a&gt;32.52.0");
}

TEST(JinjaExpr, WithFormatMarkupAndDictViews) {
  EXPECT_EQ(render("{% with a = 1 %}{{ a }}{% set b = 2 %}{% endwith %}[{{ a }}{{ b }}]"), "1[]");
  EXPECT_EQ(render("{{ '{} {x}'.format(1, x='y') }}"), "1 y");
  // |safe makes a Markup string: adding a plain one escapes the plain one (markupsafe).
  EXPECT_EQ(render("{{ '<a>' | safe + '<b>' }}|{{ '<a>' ~ '<b>' | safe }}"), "<a>&lt;b&gt;|<a><b>");
  EXPECT_EQ(render("{{ {'a': 1}.keys() }}{{ {'a': 1}.items() | list }}"), "dict_keys(['a'])[('a', 1)]");
}

TEST(JinjaExpr, StrftimeNowUsesTheGivenTime) {
  RenderOptions opt;
  opt.now_unix = 1753524000;  // 2025-07-26 10:00 UTC
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}", Json::object(), opt), "26 Jul 2025");
}

TEST(JinjaValue, JsonKeepsKeyOrder) {
  Json j = Json::parse(R"({"z": 1, "a": {"y": 2, "b": 3}})");
  EXPECT_EQ(render("{{ v }}{% for k in v %}{{ k }}{% endfor %}", {{"v", j}}), "{'z': 1, 'a': {'y': 2, 'b': 3}}za");
}

}  // namespace
}  // namespace og::jinja
