#!/usr/bin/env bash
# The test command (CI runs exactly this): set-up, the whole Release build, the
# benchmarks' build (they are not run), the unit and end-to-end tests, the
# AArch64 cross build of the kernel and KV tests run under qemu (docs/arm.md), the
# ASan+UBSan build of the unit tests, and each fuzzer for FUZZ_SECONDS
# (default 10: 12 targets; `scripts/fuzz.sh 600` is the long run, outside CI).
set -euo pipefail
cd "$(dirname "$0")/.."
# phase NAME: one line with the time the phase before took and the total so
# far, so that a log shows where CI's minutes go (the budget: docs/contributing.md).
t_phase=$SECONDS
phase() {
  echo "[test] $1 (last phase $(( SECONDS - t_phase )) s; ${SECONDS} s in all)"
  t_phase=$SECONDS
}
scripts/setup.sh
# Downloads and package installs, which need no compiler, run in the background
# while the Release tree builds: the client tests' Node packages and the AArch64
# cross build's packages (on a fresh machine ~150 MB of debs).
scripts/node_deps.sh > build/node_deps.log 2>&1 & node_pid=$!
scripts/cross-aarch64.sh deps > build/cross_deps.log 2>&1 & cross_pid=$!
waitfor() {  # waitfor PID LOG: its output, and stop when it failed
  local rc=0
  wait "$1" || rc=$?
  cat "$2"
  if [ $rc != 0 ]; then echo "[test] failed (exit $rc): see above" >&2; exit 1; fi
}
phase "Release build (every target); the Node and cross packages meanwhile"
scripts/build.sh
waitfor "$node_pid" build/node_deps.log
phase "benchmarks build"
cmake --build build --target benchmarks -j 2
phase "unit + e2e tests (Release)"
ctest --test-dir build --output-on-failure -j 2 --timeout 600
phase "AArch64: the kernel and KV unit tests, cross-built and run under qemu for each table (docs/arm.md)"
waitfor "$cross_pid" build/cross_deps.log
scripts/cross-aarch64.sh ci
scripts/test-aarch64.sh ci
phase "ASan + UBSan build and unit tests"
scripts/sanitize.sh
phase "fuzzers"
scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
phase "all passed"
