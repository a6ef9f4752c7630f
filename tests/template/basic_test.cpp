// Unit tests of the Jinja engine's basics: text, output, whitespace control.
#include <gtest/gtest.h>

#include "template/template.h"

namespace og::jinja {
namespace {

std::string render(const std::string& src, const nlohmann::ordered_json& vars = nlohmann::ordered_json::object()) {
  return Template::parse(src).render(value_from_json(vars));
}

TEST(JinjaBasic, TextAndOutput) {
  EXPECT_EQ(render("hello {{ name }}!", {{"name", "world"}}), "hello world!");
  EXPECT_EQ(render("{{ 1 + 2 }}"), "3");
}

}  // namespace
}  // namespace og::jinja
