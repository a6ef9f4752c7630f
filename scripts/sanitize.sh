#!/usr/bin/env bash
# Builds the unit tests with clang's ASan + UBSan (build-asan/) and runs them, the C
# API's (tests/api, through liboffgraph.so) included. Only the unit-test
# executables are built (target unit_tests): the command, the Python module
# and the end-to-end tests are left out (an instrumented library cannot be
# loaded by a plain python3, and the end-to-end tests run in the Release tree).
set -euo pipefail
cd "$(dirname "$0")/.."
# The fuzzers are built here too (same tree, scripts/asan_tree.sh), so that
# scripts/fuzz.sh, which runs next in CI, only runs them.
scripts/asan_tree.sh unit_tests fuzz_all
# The template oracle test reads the chat templates of the pinned npm tokenizer
# packages from <build dir>/node: share the Release tree's (installed by
# scripts/node_deps.sh, a no-op when they are there).
scripts/node_deps.sh build/node
[ -e build-asan/node ] || ln -s "$(pwd)/build/node" build-asan/node
echo "[sanitize] unit tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2 --timeout 900 -LE 'e2e|python|install|docs' \
  -E '_NOT_BUILT$'
