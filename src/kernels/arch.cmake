# The kernel folders of the target architecture (CMAKE_SYSTEM_PROCESSOR: the
# host's, or the toolchain file's when cross-compiling). Sets OG_ARCH (x86 or
# arm) and OG_KERNELS_EXCLUDE, the regex of the other architectures' kernel
# folders that og_kernels leaves out. An architecture with neither folder
# stops here: the scalar reference alone would run every model tens of times
# slower, which no one should find out at run time.
string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" _og_proc)
if(_og_proc MATCHES "^(x86_64|amd64|x64)$")
  set(OG_ARCH x86)
  set(OG_KERNELS_EXCLUDE "/src/kernels/arm/")
elseif(_og_proc MATCHES "^(aarch64|arm64)$")
  set(OG_ARCH arm)
  set(OG_KERNELS_EXCLUDE "/src/kernels/x86/")
else()
  message(FATAL_ERROR "offgraph builds for x86-64 and AArch64 only; the target architecture is "
                      "'${CMAKE_SYSTEM_PROCESSOR}' (CMAKE_SYSTEM_PROCESSOR). "
                      "docs/contributing.md says how to cross-compile for aarch64.")
endif()
message(STATUS "offgraph kernels: ${OG_ARCH} (${CMAKE_SYSTEM_PROCESSOR})")
