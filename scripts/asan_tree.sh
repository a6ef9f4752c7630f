#!/usr/bin/env bash
# Configures and builds the sanitizer tree, build-asan/: clang, ASan + UBSan,
# -O1 -g1 (line tables only: the instrumented kernels compile 3x faster than at
# -O2 -g, and reports still name file and line). One tree serves both the
# unit tests under the sanitizers (scripts/sanitize.sh) and the libFuzzer
# targets (scripts/fuzz.sh): the libraries are compiled once for both, where
# two trees (gcc for the tests, clang for the fuzzers) compiled them twice.
# Usage: scripts/asan_tree.sh TARGET...   (holds the build lock while building)
set -euo pipefail
cd "$(dirname "$0")/.."
exec 9>/tmp/offgraph-build.lock
flock 9
# A tree configured by an older script with gcc is started afresh (cmake
# cannot switch a tree's compiler).
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
# Each unit-test executable runs as OG_TEST_SHARDS ctest entries (GoogleTest
# shards, tests/CMakeLists.txt), not one process per test, whose start, exit
# and suite set-up made test_model 228 CPU-s against 122 in 8 shards.
args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DOG_SANITIZE=ON -DOG_BUILD_FUZZERS=ON
      -DOG_TEST_SHARDS="${OG_TEST_SHARDS:-8}"
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
# Configured once, and again only when these arguments change (ninja re-runs
# cmake itself when a CMakeLists changes). Configuring on every call cost CI a
# rebuild: CMake 3.25's pkg_check_modules puts libzmq's `-isystem
# /usr/include/mit-krb5` among the include directories on a fresh configure
# and among the compile options on a cached one, so the second call (fuzz.sh
# after sanitize.sh) recompiled every og_server object (~1.5 min).
stamp=build-asan/og-configure-args
if [ ! -f build-asan/build.ninja ] || [ "$(cat "$stamp" 2>/dev/null)" != "${args[*]}" ]; then
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja "${args[@]}" >/dev/null
  echo "${args[*]}" > "$stamp"
fi
cmake --build build-asan -j "$(nproc)" --target "$@"
