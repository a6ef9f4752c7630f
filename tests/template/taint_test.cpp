// Taint through the engine (template/taint.h): request bytes keep their
// taint through the operations that move text, byte by byte; any other
// operation taints its whole result; literal text is never tainted.
#include <gtest/gtest.h>

#include <string>

#include "template/template.h"

namespace og::jinja {
namespace {

using Json = nlohmann::ordered_json;

// The render with tainted bytes in [brackets] (content bytes in {braces}).
std::string marked(const char* source, const Json& request_vars, const Json& trusted = Json::object()) {
  Dict d;
  for (auto it = trusted.begin(); it != trusted.end(); ++it) d.items.emplace_back(Value(it.key()), value_from_json(it.value()));
  for (auto it = request_vars.begin(); it != request_vars.end(); ++it)
    d.items.emplace_back(Value(it.key()), value_from_json(it.value(), it.key() == "c" ? kTaintContent : kTaintField));
  const TaintedRender r = Template::parse(source).render_tainted(Value::dict(std::move(d)));
  std::string out;
  size_t at = 0;
  for (const TaintSpan& t : r.taint) {
    out += r.text.substr(at, t.begin - at);
    out += (t.kind == kTaintContent ? "{" : "[") + r.text.substr(t.begin, t.end - t.begin) + (t.kind == kTaintContent ? "}" : "]");
    at = t.end;
  }
  return out + r.text.substr(at);
}

TEST(JinjaTaint, TextMovingOperationsKeepTaintByByte) {
  const Json v = {{"x", "abc"}, {"y", "XY"}, {"c", " hi "}};
  EXPECT_EQ(marked("<{{ x }}>", v), "<[abc]>");
  EXPECT_EQ(marked("{{ '<' + x + '>' ~ y ~ 1 }}", v), "<[abc]>[XY]1");
  EXPECT_EQ(marked("{{ x[1:] }}|{{ x[::-1] }}|{{ x[0] }}|{{ x | first }}{{ x | last }}", v), "[bc]|[cba]|[a]|[ac]");
  EXPECT_EQ(marked("{% for ch in x %}{{ ch }}-{% endfor %}", v), "[a]-[b]-[c]-");
  EXPECT_EQ(marked("{{ c | trim }}|{{ c.strip() }}|{{ (c ~ '!') | trim }}", v), "{hi}|{hi}|{hi }!");
  EXPECT_EQ(marked("{{ x.replace('b', '-') }}|{{ 'a-b' | replace('-', y) }}", v), "[a]-[c]|a[XY]b");
  EXPECT_EQ(marked("{{ [x, 'lit', y] | join(', ') }}|{{ '+'.join([x, y]) }}", v), "[abc], lit, [XY]|[abc]+[XY]");
  EXPECT_EQ(marked("{{ '<%s|%s>' % (x, 2) }}|{{ '<{}>'.format(y) }}|{{ '%s!' | format(x) }}", v), "<[abc]|2>|<[XY]>|[abc]!");
  EXPECT_EQ(marked("{{ x | upper }}|{{ y.lower() }}|{{ x * 2 }}", v), "[ABC]|[xy]|[abcabc]");
  EXPECT_EQ(marked("{% macro m(a) %}<{{ a }}>{% endmacro %}{{ m(x) }}|{% set s %}({{ y }}){% endset %}{{ s }}", v),
            "<[abc]>|([XY])");
  EXPECT_EQ(marked("{% filter upper %}t{{ x }}{% endfilter %}", v), "T[ABC]");
}

// What does not map bytes one to one taints all it builds from request
// values: it cannot launder request text into template text.
TEST(JinjaTaint, OtherOperationsTaintTheirWholeResult) {
  const Json v = {{"x", "a b"}, {"d", {{"k", "v"}}}};
  EXPECT_EQ(marked("{{ x | tojson }}|{{ d }}|{{ x.split(' ') | join('-') }}", v), "[\"a b\"]|[{'k': 'v'}]|[a]-[b]");
  EXPECT_EQ(marked("{{ x | title }}|{{ x | reverse }}|{{ x | center(5) }}", v), "[A B]|[b a]|[ a b ]");
  EXPECT_EQ(marked("{{ ('<' ~ x ~ '>') | title }}", v), "[<A B>]");
  // A format string from the request taints the whole result, literal args included.
  EXPECT_EQ(marked("{{ x ~ '%s' % 'lit' }}|{{ (x ~ '%s') % 'lit' }}", v), "[a b]lit|[a blit]");
  // Keys of request dicts are request text too; numbers computed from request
  // text print as a field's text (never as content); loop counters do not.
  EXPECT_EQ(marked("{% for k in d %}{{ k }}{{ loop.index }}{% endfor %}{{ x | length }}", v), "[k]1[3]");
  EXPECT_EQ(marked("{{ '<|t' ~ (n | int) ~ '|>' }}|{{ c | length + 1 }}|{{ 2 + 2 }}", {{"n", "7"}, {"c", "abc"}}),
                   "<|t[7]|>|[4]|4");
}

// Iterating a long request string maps its characters once, not once per
// character (that was quadratic: minutes at 100,000 characters, so a quarter
// of that at 50,000, past the render's 10 s limit). 50,000, not 100,000: the
// linear render took 4.2-4.6 s under ASan on a quiet machine and went over the
// limit on a loaded one.
TEST(JinjaTaint, IteratingALongRequestStringIsLinear) {
  const std::string x(50000, 'a');
  Dict d;
  d.items.emplace_back(Value("x"), value_from_json(x, kTaintField));
  const TaintedRender r = Template::parse("{% for c in x %}{{ c }}{% endfor %}").render_tainted(Value::dict(std::move(d)));
  EXPECT_EQ(r.text, x);
  EXPECT_EQ(r.taint, (TaintSpans{{0, x.size(), kTaintField}}));
}

TEST(JinjaTaint, LiteralsAndTrustedVariablesAreNotTainted) {
  EXPECT_EQ(marked("{{ '<|a|>' }}{{ bos }}{{ bos[1:] ~ 'x' | upper }}", Json::object(), {{"bos", "<s>"}}), "<|a|><s>s>X");
  // A plain render has no taint at all.
  EXPECT_TRUE(Template::parse("{{ x }}").render_tainted(value_from_json(Json{{"x", "a"}})).taint.empty());
}

}  // namespace
}  // namespace og::jinja
