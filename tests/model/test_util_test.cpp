// The model tests' own helpers: a comparison that can pass only when it
// compared everything.
#include <gtest/gtest.h>

#include <cmath>

#include "model/model_test_util.h"

namespace og::test {
namespace {

TEST(MaxRelErr, EqualVectorsAreZeroApart) {
  EXPECT_EQ(max_rel_err({1.0f, -2.0f, 4.0f}, {1.0f, -2.0f, 4.0f}), 0.0);
  EXPECT_NEAR(max_rel_err({1.0f, -2.0f, 4.5f}, {1.0f, -2.0f, 4.0f}), 0.125, 1e-12);
}

TEST(MaxRelErr, ShorterOrEmptyOutputNeverPasses) {
  EXPECT_TRUE(std::isinf(max_rel_err({1.0f, 2.0f}, {1.0f, 2.0f, 3.0f})));
  EXPECT_TRUE(std::isinf(max_rel_err({1.0f, 2.0f, 3.0f}, {1.0f})));
  EXPECT_TRUE(std::isinf(max_rel_err({}, {1.0f})));
  EXPECT_TRUE(std::isinf(max_rel_err({}, {})));
}

TEST(MaxRelErr, NanNeverPasses) {
  EXPECT_TRUE(std::isinf(max_rel_err({1.0f, NAN}, {1.0f, 2.0f})));
  EXPECT_TRUE(std::isinf(max_rel_err({1.0f, 2.0f}, {NAN, 2.0f})));
}

}  // namespace
}  // namespace og::test
