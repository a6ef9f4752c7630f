#!/usr/bin/env bash
# The test command (CI runs exactly this): set-up, the whole Release build, the
# benchmarks' build (they are not run), the unit and end-to-end tests, the
# AArch64 cross build of the kernel and KV tests run under qemu (docs/arm.md), the
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
echo "[test] AArch64: the kernel and KV unit tests, cross-built and run under qemu for each table (docs/arm.md)"
scripts/cross-aarch64.sh ci
scripts/test-aarch64.sh ci
scripts/sanitize.sh
scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
echo "[test] all passed"
