#!/usr/bin/env bash
# Builds the unit tests with ASan + UBSan (build-asan/) and runs them, the C
# API's (tests/api, through liboffgraph.so) included. The Python and install
# tests are left out: an instrumented library cannot be loaded by a plain python3.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 9>/tmp/offgraph-build.lock
flock 9
if [ ! -f build-asan/build.ninja ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOG_SANITIZE=ON >/dev/null
fi
cmake --build build-asan -j "$(nproc)"
flock -u 9
# The template oracle test reads the chat templates of the pinned npm tokenizer
# packages from <build dir>/node: share the Release tree's (installed by
# scripts/node_deps.sh, a no-op when they are there).
scripts/node_deps.sh build/node
[ -e build-asan/node ] || ln -s "$(pwd)/build/node" build-asan/node
echo "[sanitize] unit tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2 --timeout 900 -LE 'e2e|slow|python|install'
