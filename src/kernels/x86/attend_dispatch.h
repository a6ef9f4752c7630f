// The compile-time splits the x86 attention kernels share (attend_avx2.cpp,
// attend_avx512.cpp): query heads in groups of fixed sizes, and head dims
// 64 and 128 compiled for themselves.
#pragma once

namespace og::kernels::x86 {

// Calls f.template operator()<G>(j) for each group of G heads starting at
// head j: as many groups of the first size as fit in g heads, then of the
// next size, and so on; the last size is 1, so every head is covered once.
template <int G, int... Rest, class F>
inline void for_head_groups(int g, F&& f, int j = 0) {
  for (; j + G <= g; j += G) f.template operator()<G>(j);
  if constexpr (sizeof...(Rest) > 0) for_head_groups<Rest...>(g, f, j);
  else static_assert(G == 1, "the last group size must be 1");
}

// Calls f.template operator()<DK>() with DK = dk for head dims 64 and 128
// (most models), else DK = 0 (the kernels then read dk at run time). A
// kernel gives the same bits either way.
template <class F>
inline void with_head_dim(int dk, F&& f) {
  if (dk == 64) f.template operator()<64>();
  else if (dk == 128) f.template operator()<128>();
  else f.template operator()<0>();
}

}  // namespace og::kernels::x86
