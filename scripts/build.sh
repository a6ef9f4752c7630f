#!/usr/bin/env bash
# Configures (once) and builds the Release tree in build/. Extra arguments are
# build targets (default: all). Builds are serialised with a lock file so that
# parallel work on a 2-core machine does not run two compilers at once.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
exec 9>/tmp/offgraph-build.lock
flock 9
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if [ $# -gt 0 ]; then
  targets=(); for t in "$@"; do targets+=(--target "$t"); done
  cmake --build build -j "$JOBS" "${targets[@]}"
else
  cmake --build build -j "$JOBS"
fi
