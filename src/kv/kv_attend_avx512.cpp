// AVX-512 attention kernels (filled in below); compiled with -mavx512*.
#include "kv/kv_attend.h"

namespace og::kv {

const AttendKernels* attend_kernels_avx512(KvDType) { return nullptr; }

}  // namespace og::kv
