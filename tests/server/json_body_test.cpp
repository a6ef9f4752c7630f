// The bounded JSON parser of request bodies (json_body.h): the same value as
// nlohmann's parser (key order, repeated keys), linear time, the key and depth
// limits named in a 400 with where they were hit; integers past 64 bits as a
// range error.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_body.h"

namespace og::server {
namespace {

using json = nlohmann::ordered_json;

template <class F>
ApiError error_of(F f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError";
  return ApiError(0, "", "", "");
}

// {"k0": 0, "k1": 1, ...}
std::string object_of(size_t keys, const std::string& prefix = "k") {
  std::string s = "{";
  for (size_t i = 0; i < keys; ++i) s += (i ? ",\"" : "\"") + prefix + std::to_string(i) + "\":" + std::to_string(i);
  return s + "}";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const std::string kMsgs = R"("messages": [{"role": "user", "content": "x"}])";

TEST(JsonBounded, SameValueAsNlohmann) {
  std::string many_dups = "{";  // past the size where keys are hashed, each key given three times
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 40; ++i) many_dups += "\"d" + std::to_string(i) + "\":" + std::to_string(round * 100 + i) + ",";
  many_dups += "\"last\":{\"x\":[1,{\"y\":null}]}}";
  const std::string docs[] = {
      R"({"b": 1, "a": 2, "c": {"z": [1, 2.5, "s", true, false, null], "y": {}}, "d": []})",
      R"({"a": 1, "b": 2, "a": 3})",                    // repeated: first place, last value
      R"({"a": {"x": 1}, "a": [1, 2], "b": {"a": 1, "a": {"q": 2}}})",  // a container replaced
      R"([1, [2, [3, {"k": "v"}]], {}])",
      R"("top")",
      R"(-12345678901234)",
      R"(18446744073709551615)",
      R"(1.5e300)",
      "{\"caf\\u00e9\": \"\\ud83d\\ude00\"}",
      object_of(100),
      many_dups,
  };
  for (const std::string& d : docs) {
    const JsonParse p = parse_json_bounded(d);
    ASSERT_EQ(p.error, "") << d.substr(0, 80);
    const json want = json::parse(d);
    EXPECT_EQ(p.value, want) << d.substr(0, 80);
    EXPECT_EQ(p.value.dump(), want.dump()) << d.substr(0, 80);  // key order too
  }
}

TEST(JsonBounded, SyntaxErrorsAreNotLimits) {
  for (const std::string d : {"{", "{\"a\" 1}", "[1,]", "{\"a\": 1} x", "1e999", "\"\xff\""}) {
    const JsonParse p = parse_json_bounded(d);
    EXPECT_NE(p.error.find("is not valid JSON"), std::string::npos) << d << " -> " << p.error;
    EXPECT_FALSE(p.limit) << d;
  }
}

// The repro of issue 50: a body of 200k keys took 28 s (quadratic), on every
// route, before anything looked at it. Now the key limit stops it at key 4097.
TEST(JsonBody, TwoHundredThousandKeysAreA400NamingTheLimit) {
  const std::string body = object_of(200000);
  const auto t0 = std::chrono::steady_clock::now();
  const ApiError e = error_of([&] { parse_json_object(body); });
  const double s = seconds_since(t0);
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "json_too_complex");
  EXPECT_NE(std::string(e.what()).find("more than " + std::to_string(kMaxJsonObjectKeys) + " keys"),
            std::string::npos)
      << e.what();
  EXPECT_LT(s, 2.0) << "a regression guard against quadratic parsing";
}

TEST(JsonBody, KeyLimitIsPerObjectAndNamesWhere) {
  EXPECT_NO_THROW(parse_json_object(object_of(kMaxJsonObjectKeys)));
  // Many objects at the limit are fine: the limit is per object, the body's size bounds the rest.
  std::string wide = "{\"a\": [";
  for (int i = 0; i < 8; ++i) wide += (i ? "," : "") + object_of(kMaxJsonObjectKeys);
  EXPECT_NO_THROW(parse_json_object(wide + "]}"));
  const struct {
    std::string body, where;
  } cases[] = {
      {object_of(kMaxJsonObjectKeys + 1), ""},
      {"{" + kMsgs + ", \"chat_template_kwargs\": " + object_of(50000) + "}", "chat_template_kwargs"},
      {"{" + kMsgs + R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
          "properties": )" + object_of(kMaxJsonObjectKeys + 1, "p") + "}}}]}",
       "tools[0].function.parameters.properties"},
  };
  for (const auto& c : cases) {
    const ApiError e = error_of([&] { parse_chat_request(parse_json_object(c.body)); });
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), c.where) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("more than 4096 keys"), std::string::npos) << what;
    if (!c.where.empty()) EXPECT_NE(what.find("at '" + c.where + "'"), std::string::npos) << what;
  }
  // A repeated key is one key.
  std::string dups = "{";
  for (size_t i = 0; i < kMaxJsonObjectKeys + 10; ++i) dups += "\"k" + std::to_string(i % 10) + "\":1,";
  EXPECT_EQ(parse_json_object(dups + "\"z\":1}").size(), 11u);
}

// Linear in keys whatever the objects' sizes: 20 objects of 4096 keys parse
// about as fast as the same keys in objects of 15 (nlohmann's own builder
// searched each object linearly per key: here about 20 times slower).
TEST(JsonBounded, TimeDoesNotGrowWithObjectSize) {
  auto body_of = [](size_t objects, size_t keys) {
    std::string s = "[";
    for (size_t i = 0; i < objects; ++i) s += (i ? "," : "") + object_of(keys);
    return s + "]";
  };
  const std::string wide = body_of(20, 4096), narrow = body_of(20 * 4096 / 15, 15);
  auto best_of_3 = [](const std::string& body) {
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const JsonParse p = parse_json_bounded(body);
      best = std::min(best, seconds_since(t0));
      EXPECT_EQ(p.error, "");
    }
    return best;
  };
  const double t_wide = best_of_3(wide), t_narrow = best_of_3(narrow);
  EXPECT_LT(t_wide, 5 * t_narrow + 0.02) << "wide " << t_wide << " s, narrow " << t_narrow << " s";
}

TEST(JsonBody, DepthLimitNamesWhere) {
  const std::string deep = R"({"a": [{"b": )" + std::string(100, '[') + std::string(100, ']') + "}]}";
  const ApiError e = error_of([&] { parse_json_object(deep); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "json_too_complex");
  EXPECT_NE(std::string(e.what()).find("nests deeper than 64 levels at 'a[0].b[0][0]"), std::string::npos)
      << e.what();
  // A long key is cut in the message, which stays one short line.
  const std::string long_key(100000, 'k');
  const std::string body = "{\"" + long_key + "\": " + std::string(70, '[') + std::string(70, ']') + "}";
  const std::string what = error_of([&] { parse_json_object(body); }).what();
  EXPECT_LT(what.size(), 400u);
  EXPECT_NE(what.find("(cut;"), std::string::npos) << what;
  // Cut on whole characters: a key of 2-byte characters is cut at an even byte count (160, not 161).
  std::string accents;
  for (int i = 0; i < 1000; ++i) accents += "\xc3\xa9";
  const ApiError cut = error_of([&] {
    parse_json_object("{\"" + accents + "\": " + std::string(70, '[') + std::string(70, ']') + "}");
  });
  EXPECT_EQ(cut.param().substr(0, 161), accents.substr(0, 160) + "[") << cut.param();
}

// A tool call's arguments are client JSON in a string: parsed by the same bounded parser.
TEST(JsonBody, ToolCallArgumentsAreBounded) {
  const std::string args = object_of(kMaxJsonObjectKeys + 1);
  const std::string body = R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "1", "type": "function",
      "function": {"name": "f", "arguments": )" + json(args).dump() + "}}]}]}";
  const ApiError e = error_of([&] { parse_chat_request(parse_json_object(body)); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(e.code(), "json_too_complex");
  EXPECT_NE(std::string(e.what()).find("more than 4096 keys"), std::string::npos) << e.what();
  // Within the limits, key order is kept.
  const GenerationRequest r = parse_chat_request(parse_json_object(
      R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "1", "type": "function",
          "function": {"name": "f", "arguments": "{\"z\": 1, \"a\": 2}"}}]}]})"));
  EXPECT_EQ(r.forms.template_request["messages"][0]["tool_calls"][0]["function"]["arguments"].dump(), R"({"z":1,"a":2})");
}

// "seed": 2^64 was "must be an integer, not a number": an integer past 64 bits
// is parsed as a float, and is now a range error naming the range.
TEST(JsonBody, IntegersPast64BitsAreRangeErrors) {
  const std::string range = "outside [-9223372036854775808, 9223372036854775807]";
  for (const std::string seed : {"18446744073709551616", "18446744073709551615", "9223372036854775808",
                                 "-9223372036854775809", "1e30"}) {
    const std::string body = "{" + kMsgs + ", \"seed\": " + seed + "}";
    const ApiError e = error_of([&] { parse_chat_request(parse_json_object(body)); });
    EXPECT_EQ(e.status(), 400) << seed;
    EXPECT_EQ(e.param(), "seed") << seed;
    const std::string what = e.what();
    EXPECT_NE(what.find(range), std::string::npos) << seed << " -> " << what;
    EXPECT_NE(what.find("must be an integer in that range"), std::string::npos) << seed << " -> " << what;
  }
  // The range's ends are seeds.
  for (const std::string seed : {"9223372036854775807", "-9223372036854775808", "0"})
    EXPECT_NO_THROW(parse_chat_request(parse_json_object("{" + kMsgs + ", \"seed\": " + seed + "}"))) << seed;
  // A fraction, or a whole number written as one within range, is still a type error.
  for (const std::string v : {"1.5", "1e3", "2.0"}) {
    const ApiError e = error_of([&] { parse_chat_request(parse_json_object("{" + kMsgs + ", \"n\": " + v + "}")); });
    EXPECT_NE(std::string(e.what()).find("must be an integer, not a number"), std::string::npos) << v << e.what();
  }
  // Any integer field: a whole number past its range is a range error.
  const ApiError e = error_of([&] { parse_chat_request(parse_json_object("{" + kMsgs + ", \"max_tokens\": 1e12}")); });
  EXPECT_NE(std::string(e.what()).find("'max_tokens' is 1000000000000, outside [0, 2147483647]"), std::string::npos)
      << e.what();
}

}  // namespace
}  // namespace og::server
