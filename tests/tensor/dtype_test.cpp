#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace og {

TEST(DType, BlockSizes) {
  EXPECT_EQ(dtype_info(DType::Q4_K).block_bytes, 144);
  EXPECT_EQ(dtype_info(DType::Q6_K).block_bytes, 210);
  EXPECT_EQ(dtype_info(DType::Q8_0).block, 32);
  EXPECT_EQ(dtype_row_bytes(DType::Q4_0, 64), 36);
  EXPECT_EQ(dtype_info(4u), nullptr);  // removed id
  EXPECT_EQ(dtype_name(43), "type#43");
}

TEST(DType, F16RoundTripIsExactForAllHalves) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(DType, F16RoundsToNearestEven) {
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 1.0f / 2048)), 1.0f);           // tie -> even
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie -> even (up)
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);                                  // overflow -> inf
  EXPECT_EQ(f16_to_f32(f32_to_f16(5.96046448e-8f)), 5.96046448e-8f);    // smallest subnormal
}

TEST(DType, BF16) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(std::nanf("")) & 0x7fc0, 0x7fc0);
}

}  // namespace og
