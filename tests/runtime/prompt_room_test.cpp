// runtime/prompt_room: a prompt must leave room for one generated token,
// after the history it follows; one message says so.
#include "runtime/prompt_room.h"

#include <gtest/gtest.h>

namespace og {
namespace {

TEST(PromptRoom, APromptLeavesRoomForOneGeneratedToken) {
  EXPECT_TRUE(prompt_leaves_room(0, 29, 30));
  EXPECT_FALSE(prompt_leaves_room(0, 30, 30));
  EXPECT_TRUE(prompt_leaves_room(8, 21, 30));
  EXPECT_FALSE(prompt_leaves_room(8, 22, 30));
  EXPECT_TRUE(prompt_leaves_room(29, 0, 30));   // nothing new: generating from the history
  EXPECT_FALSE(prompt_leaves_room(30, 0, 30));  // a full history has no room either
  EXPECT_FALSE(prompt_leaves_room(31, 0, 30));
  EXPECT_EQ(prompt_room_error(0, 29, 30), "");
  EXPECT_EQ(prompt_room_error(0, 30, 30),
            "the prompt of 30 tokens does not fit: a session of 30 positions holds the prompt and at least one "
            "generated token");
  EXPECT_EQ(prompt_room_error(8, 22, 30),
            "the prompt of 22 tokens does not fit after 8 tokens of history: a session of 30 positions holds them "
            "and at least one generated token");
}

}  // namespace
}  // namespace og
