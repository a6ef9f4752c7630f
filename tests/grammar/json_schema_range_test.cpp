// Exhaustive checks of the grammars built over digits and characters:
// integer bounds against plain comparison, number bounds against the
// validator's exact comparison, patterns against std::regex (ECMAScript, on
// ASCII) and the validator, and dates against std::chrono's calendar.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_validate.h"

namespace og::grammar {
namespace {

using Json = nlohmann::ordered_json;

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

std::shared_ptr<const Grammar> compile(const Json& schema) { return Grammar::parse(json_schema_to_grammar(schema)); }

TEST(JsonSchemaRange, IntegerBoundsAreExact) {
  const std::vector<int64_t> edges = {0, 1, -1, 9, -9, 10, -10, 99, 100, -100, 123, -456, 1000, 1999, 2000, 99999, -100000};
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t a : edges)
    for (int64_t b : edges)
      if (a <= b) pairs.push_back({a, b});
  std::mt19937_64 rng(3);
  for (int i = 0; i < 40; ++i) {
    int64_t a = int64_t(rng() % 200001) - 100000, b = a + int64_t(rng() % 5000);
    pairs.push_back({a, b});
  }
  int checked = 0;
  for (const auto& [lo, hi] : pairs) {
    auto g = compile({{"type", "integer"}, {"minimum", lo}, {"maximum", hi}});
    std::vector<int64_t> probes;
    for (int64_t d = -25; d <= 25; ++d) probes.insert(probes.end(), {lo + d, hi + d});
    for (int k = 0; k < 20; ++k) probes.push_back(lo + int64_t(rng() % uint64_t(hi - lo + 1)));
    for (int64_t n : probes) {
      ASSERT_EQ(accepts(g, std::to_string(n)), lo <= n && n <= hi) << n << " in [" << lo << ", " << hi << "]";
      ++checked;
    }
    EXPECT_FALSE(accepts(g, "-0"));
    EXPECT_FALSE(accepts(g, "0" + std::to_string(std::abs(lo) + 1)));  // no leading zeros
  }
  EXPECT_GT(checked, 10000);
  // Exclusive and fractional bounds, and one-sided ranges up to 18 digits.
  auto g = compile({{"type", "integer"}, {"exclusiveMinimum", -2.5}, {"exclusiveMaximum", 3}});
  for (int n = -5; n <= 5; ++n) EXPECT_EQ(accepts(g, std::to_string(n)), n >= -2 && n <= 2) << n;
  g = compile({{"type", "integer"}, {"minimum", 5}});
  EXPECT_TRUE(accepts(g, "999999999999999999"));
  EXPECT_FALSE(accepts(g, "1000000000000000000"));
  EXPECT_FALSE(accepts(g, "4"));
  EXPECT_THROW(compile({{"type", "integer"}, {"minimum", 1e30}}), SchemaError);  // nothing with 18 digits
  EXPECT_THROW(compile({{"type", "integer"}, {"maximum", -1e30}}), SchemaError);
}

TEST(JsonSchemaRange, NumberBoundsAgreeWithTheValidator) {
  const std::vector<Json> bounds = {0, 1, -1, 0.5, -0.5, 2.25, -2.25, 0.1, 0.001, -0.001, 10, 99.99, -100, 1e-7, 12345.678};
  std::mt19937_64 rng(5);
  auto random_text = [&]() {
    std::string s = rng() % 2 ? "-" : "";
    int ilen = int(rng() % 6);
    s += ilen == 0 ? "0" : std::to_string(1 + rng() % 9);
    for (int i = 1; i < ilen; ++i) s += char('0' + rng() % 10);
    if (rng() % 3) {
      s += ".";
      for (int i = 0, n = 1 + int(rng() % 8); i < n; ++i) s += char('0' + (rng() % 4 ? rng() % 10 : 0));
    }
    return s;
  };
  int checked = 0;
  for (const Json& lo : bounds)
    for (const Json& hi : bounds) {
      for (int kinds = 0; kinds < 4; ++kinds) {
        Json s = {{"type", "number"}};
        s[kinds & 1 ? "exclusiveMinimum" : "minimum"] = lo;
        s[kinds & 2 ? "exclusiveMaximum" : "maximum"] = hi;
        std::shared_ptr<const Grammar> g;
        try {
          g = compile(s);
        } catch (const SchemaError&) {  // an empty range
          continue;
        }
        std::vector<std::string> texts;
        for (const Json& b : bounds) {
          std::string t = b.dump();
          std::string frac = t.find('.') == std::string::npos ? t + "." : t;
          texts.insert(texts.end(), {t, frac + "0", frac + "01", frac + "99"});
        }
        for (int k = 0; k < 60; ++k) texts.push_back(random_text());
        for (const auto& t : texts) {
          if (t.find('e') != std::string::npos) continue;  // exponents: not written under bounds
          Json v = Json::parse(t);
          bool negative_zero = t[0] == '-' && v == 0;  // "-0.0": left out, as -0 is
          ASSERT_EQ(accepts(g, t), validate_json(v, s).valid && !negative_zero) << t << " in " << s.dump();
          ++checked;
        }
      }
    }
  EXPECT_GT(checked, 50000);
  // An unbounded side still writes at most 15 digits, and no exponent.
  auto g = compile({{"type", "number"}, {"minimum", 0}});
  EXPECT_TRUE(accepts(g, "123456789012345"));
  EXPECT_TRUE(accepts(g, "1234567.12345678"));
  EXPECT_FALSE(accepts(g, "1234567890123456"));
  EXPECT_FALSE(accepts(g, "1e5"));
}

TEST(JsonSchemaRange, PatternsAgreeWithStdRegexAndTheValidator) {
  const std::vector<std::string> patterns = {
      "^[a-c]+$", "ab", "^a|b$", "^(ab|c)*$", "^a{2,3}b?$", "a.c", "^\\d+(\\.\\d{1,2})?$", "^[^abc]*$", "^(a|)+b",
      "^\\w*\\s?\\W$", "c{2,}", "^(?:x|yz){1,3}$", "^[a-]?[\\]b]$", "^$", "^\\.\\*\\+\\?$", "^[\\d\\-]+$", "b+?c"};
  const std::string alphabet = "abcxyz.*+?-]0129 _";
  std::mt19937_64 rng(11);
  int checked = 0;
  for (const auto& p : patterns) {
    Json s = {{"type", "string"}, {"pattern", p}};
    auto g = compile(s);
    std::regex re(p, std::regex::ECMAScript);
    for (int k = 0; k < 400; ++k) {
      std::string str;
      for (int i = 0, n = int(rng() % 7); i < n; ++i) str += alphabet[rng() % alphabet.size()];
      bool want = std::regex_search(str, re);
      std::string text = Json(str).dump();
      ASSERT_EQ(accepts(g, text), want) << "pattern " << p << " on " << text;
      ASSERT_EQ(validate_json(Json(str), s).valid, want) << "pattern " << p << " on " << text;
      ++checked;
    }
  }
  EXPECT_GT(checked, 5000);
}

TEST(JsonSchemaRange, DatesFollowTheCalendar) {
  auto g = compile({{"type", "string"}, {"format", "date"}});
  auto gt = compile({{"type", "string"}, {"format", "date-time"}});
  int checked = 0;
  for (int y : {1, 4, 100, 400, 1600, 1700, 1899, 1900, 1999, 2000, 2023, 2024, 2100, 9996, 9999}) {
    for (unsigned m = 0; m <= 13; ++m)
      for (unsigned d = 0; d <= 32; ++d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "\"%04d-%02u-%02u\"", y, m, d);
        bool ok = std::chrono::year_month_day(std::chrono::year(y), std::chrono::month(m), std::chrono::day(d)).ok();
        ASSERT_EQ(accepts(g, buf), ok) << buf;
        ASSERT_EQ(validate_json(Json::parse(buf), {{"format", "date"}}).valid, ok) << buf;
        std::string dt = std::string(buf).substr(0, 11) + "T08:30:00Z\"";
        ASSERT_EQ(accepts(gt, dt), ok) << dt;
        ++checked;
      }
  }
  EXPECT_FALSE(accepts(g, "\"0000-01-01\""));
  EXPECT_GT(checked, 5000);
}

}  // namespace
}  // namespace og::grammar
