#!/usr/bin/env bash
# The test command (CI runs exactly this): set-up, the whole Release build, the
# benchmarks' build (they are not run), the unit and end-to-end tests, the
# ASan+UBSan build of the unit tests, and each fuzzer for FUZZ_SECONDS
# (default 10: 11 targets; `scripts/fuzz.sh 600` is the long run, outside CI).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "[test] Release build (every target) and the client tests' Node packages"
scripts/build.sh
scripts/node_deps.sh
echo "[test] benchmarks build"
cmake --build build --target benchmarks -j 2
echo "[test] unit + e2e tests (Release)"
ctest --test-dir build --output-on-failure -j 2 --timeout 600
scripts/sanitize.sh
scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
echo "[test] all passed"
