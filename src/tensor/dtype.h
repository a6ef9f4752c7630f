// DType: the element types of tensors, numbered as ggml type ids so GGUF files
// map directly; block geometry of every id; f16/bf16 scalar conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace og {

enum class DType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
  IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28,
  IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
  // offgraph's own in-memory layouts (never in a file: ggml retired ids 31-33, 36-38, and 47):
  // Q4_K with each block's quants regrouped for the int8 matmul (kernels/ops.h repack_rows).
  Q4_K_R = 37,
  // Q8_0 with each 8 consecutive rows interleaved per block (ref.h repack_q8_0_r):
  // a matrix layout, so a row pointer alone does not locate a row (get_row does).
  Q8_0_R = 38,
  // Q6_K with each block's 6-bit levels regrouped for the int8 matmul (ref.h repack_q6_k_r).
  Q6_K_R = 36,
  // Q5_K with each block's quants and fifth bits regrouped for the int8 matmul (ref.h repack_q5_k_r).
  Q5_K_R = 31,
  // Q4_0 with each 8 consecutive rows interleaved per block (ref.h repack_q4_0_r): a
  // matrix layout like Q8_0_R.
  Q4_0_R = 32,
  // Q4_K with each 16 consecutive rows interleaved per block (ref.h repack_q4_k_r16):
  // a matrix layout like Q8_0_R, one row per lane of a 512-bit register.
  Q4_K_R16 = 33,
  // Q6_K interleaved like Q4_K_R16 (ref.h repack_q6_k_r16). No retired ggml id
  // is left: 47 is beyond ggml's ids (42 the last), and a file naming it is
  // refused like any internal layout.
  Q6_K_R16 = 47,
  // IQ4_NL interleaved like Q4_0_R (the same 18-byte blocks, so the same byte
  // moves; ref.h repack_q4_0_r), and MXFP4 likewise with its one-byte
  // exponents first (ref.h repack_mxfp4_r). Beyond ggml's ids, like 47.
  IQ4_NL_R = 48,
  MXFP4_R = 49,
};

struct DTypeInfo {
  const char* name;     // "q4_k"
  int64_t block;        // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  bool computable;      // offgraph has kernels for it (weights of this type can be used)
  bool internal = false;  // an in-memory layout of offgraph's: never read from or written to a file
};

// nullptr when `id` is not a ggml type id offgraph knows the size of.
const DTypeInfo* dtype_info(uint32_t id);
const DTypeInfo& dtype_info(DType t);  // t must be a known id
std::string dtype_name(uint32_t id);   // "q4_k", or "type#41" for unknown ids
bool dtype_from_name(const std::string& name, DType* out);  // case-insensitive "q4_k", "F16"
// Bytes of one row of n elements; throws og::Error if n is not a multiple of the block.
int64_t dtype_row_bytes(DType t, int64_t n);

// IEEE binary16 <-> binary32, exact on the way up, round-to-nearest-even down.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
// bfloat16: upper 16 bits of binary32; round-to-nearest-even, NaN kept quiet.
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace og
