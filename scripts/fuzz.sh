#!/usr/bin/env bash
# Builds the libFuzzer targets in the clang sanitizer tree (build-asan/) and runs each for N
# seconds (default 60; 9 targets), seeded from fuzz/corpus/<target>/ and the
# real test data (copied into build-asan/seeds/<target>/, never into the repo).
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
# The sanitizer tree (scripts/asan_tree.sh): its libraries carry the fuzzers'
# coverage instrumentation; after scripts/sanitize.sh this builds nothing.
scripts/asan_tree.sh fuzz_all
for f in build-asan/fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  work=build-asan/corpus/$name
  mkdir -p "$work"
  seeds=()
  [ -d "fuzz/corpus/$name" ] && seeds+=("fuzz/corpus/$name")
  real=build-asan/seeds/$name
  mkdir -p "$real"
  for s in $(seed_files "$name"); do
    if [ -f "$s" ]; then cp -f "$s" "$real/"; fi
  done
  seeds+=("$real")
  echo "[fuzz] $name for ${SECONDS_EACH}s"
  "$f" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
       -print_final_stats=1 "$work" "${seeds[@]}" 2>&1 | tail -n 12
done
