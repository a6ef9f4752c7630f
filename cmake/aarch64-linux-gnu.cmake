# Cross-compiling for AArch64 Linux from an x86-64 Debian host with Debian's
# cross compiler (g++-aarch64-linux-gnu) and the arm64 multiarch packages
# (dpkg --add-architecture arm64): headers from /usr/include, libraries from
# /usr/lib/aarch64-linux-gnu. scripts/cross-aarch64.sh installs them and
# configures build-aarch64/ with this file.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Libraries and CMake packages from the arm64 multiarch directories only;
# programs (pkg-config, git) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/cmake)

# pkg-config reads the arm64 .pc files (and the arch-independent ones);
# PKG_CONFIG_PATH, searched first, can add more (the script's extracted
# sentencepiece).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

# The tests run the cross-built programs under qemu-user (gtest discovery and
# ctest included), with the arm64 loader and C library of libc6:arm64 at their
# multiarch places. Not `-L /usr/aarch64-linux-gnu`: that loader is the cross
# package's (libc6-arm64-cross 2.36-8) while libc.so.6 is still found in
# /lib/aarch64-linux-gnu (2.36-9+deb12u14), and with the two mixed the first
# thread a program creates hangs.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
