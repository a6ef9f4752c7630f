// one_line(): every control byte escaped, so a message is one line.
#include <gtest/gtest.h>

#include <string>

#include "base/one_line.h"

namespace og {
namespace {

TEST(OneLine, ControlBytesAreEscaped) {
  EXPECT_EQ(one_line("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(one_line(std::string("x\0y\x1b\x7f", 5)), "x\\x00y\\x1b\\x7f");
  EXPECT_EQ(one_line("plain 'text' \\ é"), "plain 'text' \\ é");  // UTF-8 and quotes kept
}

TEST(OneLine, QuotesAreEscapedOnRequest) {
  std::string out = "'";
  append_one_line(out, "it's a\\b\n", true);
  out += "'";
  EXPECT_EQ(out, "'it\\'s a\\\\b\\n'");
}

TEST(OneLine, NoLineBreakSurvives) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string s = one_line(all);
  EXPECT_EQ(s.find('\n'), std::string::npos);
  EXPECT_EQ(s.find('\r'), std::string::npos);
  for (const char c : s) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f);
}

}  // namespace
}  // namespace og
