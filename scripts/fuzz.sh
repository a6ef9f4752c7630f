#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each for N
# seconds (default 60; 9 targets), seeded from fuzz/corpus/<target>/ and the
# real test data (copied into build-fuzz/seeds/<target>/, never into the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
TESTDATA=${OG_TESTDATA_DIR:-../shared/testdata}
# Real files each target starts from (those present are used).
seed_files() {
  case "$1" in
    fuzz_config) echo "$TESTDATA/models/stories260K-hf/config.json" ;;
    fuzz_tokenizer_json) echo "$TESTDATA/models/stories260K-hf/tokenizer.json" ;;
    fuzz_tokenizer_model) echo "$TESTDATA/models/stories260K/tok512.model" ;;
    fuzz_jinja) echo tests/template/data/templates/*.jinja ;;
    fuzz_grammar) echo tests/grammar/data/*.gbnf ;;
  esac
}
exec 9>/tmp/offgraph-build.lock
flock 9
# -O1 -g1 (line tables only), as the sanitizer tree: a much faster build, and
# crash reports still name file and line.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DOG_BUILD_FUZZERS=ON -DOG_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_all
flock -u 9
for f in build-fuzz/fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  work=build-fuzz/corpus/$name
  mkdir -p "$work"
  seeds=()
  [ -d "fuzz/corpus/$name" ] && seeds+=("fuzz/corpus/$name")
  real=build-fuzz/seeds/$name
  mkdir -p "$real"
  for s in $(seed_files "$name"); do
    if [ -f "$s" ]; then cp -f "$s" "$real/"; fi
  done
  seeds+=("$real")
  echo "[fuzz] $name for ${SECONDS_EACH}s"
  "$f" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
       -print_final_stats=1 "$work" "${seeds[@]}" 2>&1 | tail -n 12
done
