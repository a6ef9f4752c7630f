# Files named *_avx2.cpp / *_avxvnni.cpp / *_avx512.cpp are the only ones
# compiled for newer instruction sets; src/kernels/dispatch.cpp picks them at
# run time. x86-64 targets only (src/kernels/arch.cmake).
# On AArch64 the same for *_dotprod.cpp (sdot, ARMv8.2), *_i8mm.cpp
# (smmla) and arm/*_bf16.cpp (bfmmla); every other file stays ARMv8.0 (src/kernels/arm/cpu_arm.cpp picks
# the table from HWCAP).
if(OG_ARCH STREQUAL "arm")
  file(GLOB_RECURSE og_dotprod_srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/*_dotprod.cpp")
  file(GLOB_RECURSE og_i8mm_srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/*_i8mm.cpp")
  set_source_files_properties(${og_dotprod_srcs} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
  set_source_files_properties(${og_i8mm_srcs} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+i8mm")
  # BF16 (bfcvtn, bfmmla): the i8mm table adds these only when HWCAP2 says BF16.
  file(GLOB og_bf16_srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/kernels/arm/*_bf16.cpp")
  set_source_files_properties(${og_bf16_srcs} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+bf16")
endif()
if(NOT OG_ARCH STREQUAL "x86")
  return()
endif()
file(GLOB_RECURSE og_avx2_srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/*_avx2.cpp")
file(GLOB_RECURSE og_avxvnni_srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/*_avxvnni.cpp")
file(GLOB_RECURSE og_avx512_srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/*_avx512.cpp")
set_source_files_properties(${og_avx2_srcs} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
set_source_files_properties(${og_avxvnni_srcs} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")
set_source_files_properties(${og_avx512_srcs} PROPERTIES COMPILE_OPTIONS
  "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512bf16")
# In the sanitizer tree the AVX-VNNI and AVX-512 files are compiled
# uninstrumented: they were a sixth of its library build time (matmul_avx512
# alone 89 s), and the CI machines (AVX2) never run them. The AVX2 files, which
# the sanitizer run does execute, stay instrumented; every variant is checked
# against the scalar reference in the Release tree.
if(OG_SANITIZE)
  set_property(SOURCE ${og_avxvnni_srcs} ${og_avx512_srcs} APPEND PROPERTY COMPILE_OPTIONS "-fno-sanitize=all")
endif()
