// The ggml type table (block sizes from the GGUF/ggml formats) and half-float
// conversions.
#include "tensor/dtype.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"

namespace og {

namespace {
struct Entry {
  uint32_t id;
  DTypeInfo info;
};
// clang-format off
constexpr Entry kTable[] = {
  {0,  {"f32", 1, 4, true}},      {1,  {"f16", 1, 2, true}},
  {2,  {"q4_0", 32, 18, true}},   {3,  {"q4_1", 32, 20, true}},
  {6,  {"q5_0", 32, 22, true}},   {7,  {"q5_1", 32, 24, true}},
  {8,  {"q8_0", 32, 34, true}},   {9,  {"q8_1", 32, 36, false}},
  {10, {"q2_k", 256, 84, true}},  {11, {"q3_k", 256, 110, true}},
  {12, {"q4_k", 256, 144, true}}, {13, {"q5_k", 256, 176, true}},
  {14, {"q6_k", 256, 210, true}}, {15, {"q8_k", 256, 292, false}},
  {16, {"iq2_xxs", 256, 66, false}}, {17, {"iq2_xs", 256, 74, false}},
  {18, {"iq3_xxs", 256, 98, false}}, {19, {"iq1_s", 256, 50, false}},
  {20, {"iq4_nl", 32, 18, true}},   {21, {"iq3_s", 256, 110, false}},
  {22, {"iq2_s", 256, 82, false}},   {23, {"iq4_xs", 256, 136, true}},
  {24, {"i8", 1, 1, false}},  {25, {"i16", 1, 2, false}}, {26, {"i32", 1, 4, false}},
  {27, {"i64", 1, 8, false}}, {28, {"f64", 1, 8, false}},
  {29, {"iq1_m", 256, 56, false}}, {30, {"bf16", 1, 2, true}},
  {34, {"tq1_0", 256, 54, false}}, {35, {"tq2_0", 256, 66, false}},
  {39, {"mxfp4", 32, 17, true}},
  {37, {"q4_k_r", 256, 144, false, true}}, {38, {"q8_0_r", 32, 34, false, true}},
  {36, {"q6_k_r", 256, 210, false, true}}, {31, {"q5_k_r", 256, 176, false, true}},
  {32, {"q4_0_r", 32, 18, false, true}}, {33, {"q4_k_r16", 256, 144, false, true}},
  {47, {"q6_k_r16", 256, 210, false, true}},
  {48, {"iq4_nl_r", 32, 18, false, true}}, {49, {"mxfp4_r", 32, 17, false, true}},
  // Newer ggml ids: NVFP4 = 4 E4M3 scale bytes + 32 code bytes per 64;
  // Q1_0 = f16 scale + 128 sign bits; Q2_0 = f16 scale + 64 2-bit codes.
  {40, {"nvfp4", 64, 36, false}}, {41, {"q1_0", 128, 18, false}},
  {42, {"q2_0", 64, 18, false}},
};
// clang-format on
}  // namespace

const DTypeInfo* dtype_info(uint32_t id) {
  for (const auto& e : kTable)
    if (e.id == id) return &e.info;
  return nullptr;
}

const DTypeInfo& dtype_info(DType t) {
  const DTypeInfo* i = dtype_info(static_cast<uint32_t>(t));
  OG_CHECK(i, "unknown dtype id ", static_cast<uint32_t>(t));
  return *i;
}

std::string dtype_name(uint32_t id) {
  const DTypeInfo* i = dtype_info(id);
  return i ? std::string(i->name) : cat("type#", id);
}

bool dtype_from_name(const std::string& name, DType* out) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& e : kTable)
    if (n == e.info.name && !e.info.internal) {
      *out = static_cast<DType>(e.id);
      return true;
    }
  return false;
}

int64_t dtype_row_bytes(DType t, int64_t n) {
  const DTypeInfo& i = dtype_info(t);
  OG_CHECK(n % i.block == 0, "a row of ", n, " elements is not a whole number of ", i.name, " blocks (",
           i.block, ")");
  return n / i.block * i.block_bytes;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      u = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | man << 13;
  } else {
    u = sign | (exp + 112) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    uint32_t e = abs >> 23;
    uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14 + (113 - e)
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  uint32_t h = r >> 13;
  uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

}  // namespace og
