// The dot-product table's kernels (ARMv8.2 FEAT_DotProd, sdot; compiled with
// -march=armv8.2-a+dotprod by src/kernels/isa.cmake, run only when HWCAP
// says the CPU has it): the Q8_0, Q4_0, Q4_K and Q6_K matmuls over
// activations quantized once per matmul to int8 blocks of 32
// (q8_blocks_arm.inc). The table starts from the baseline NEON one
// (matmul_neon.cpp), which keeps every other weight type.
#include "kernels/arm/q8_blocks_arm.inc"

namespace og::kernels {

void register_dotprod(KernelTable& k) {
  auto set = [&k](DType t, auto rows) { k.matmul[static_cast<int>(t)] = MatmulImpl{&q8arm::act_bytes, &q8arm::prepare, rows, 1}; };
  set(DType::Q8_0, &q8arm::rows_sdot<q8arm::Q8_0T>);
  set(DType::Q4_0, &q8arm::rows_sdot<q8arm::Q4_0T>);
  set(DType::Q4_K, &q8arm::rows_sdot<q8arm::Q4_KT>);
  set(DType::Q6_K, &q8arm::rows_sdot<q8arm::Q6_KT>);
  set(DType::Q4_1, &q8arm::rows_sdot<q8arm::Q4_1T>);
  set(DType::Q5_0, &q8arm::rows_sdot<q8arm::Q5_0T>);
  set(DType::Q5_1, &q8arm::rows_sdot<q8arm::Q5_1T>);
  set(DType::Q5_K, &q8arm::rows_sdot<q8arm::Q5_KT>);
  set(DType::IQ4_NL, &q8arm::rows_sdot<q8arm::IQ4_NLT>);
  set(DType::IQ4_XS, &q8arm::rows_sdot<q8arm::IQ4_XST>);
  set(DType::MXFP4, &q8arm::rows_sdot<q8arm::MXFP4T>);
  set(DType::Q2_K, &q8arm::rows_sdot<q8arm::Q2_KT>);
  set(DType::Q3_K, &q8arm::rows_sdot<q8arm::Q3_KT>);
}

}  // namespace og::kernels
