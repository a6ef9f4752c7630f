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
# One fuzzer per core at a time (FUZZ_JOBS, default nproc): each is one
# process on one core and still runs its full SECONDS_EACH; run one after the
# other they left the second core of CI's 2-core machine idle (212 s -> ~110 s).
# Each one's last lines go to build-asan/fuzz-logs/NAME.txt and are printed
# in order once all have ended; any fuzzer's failure fails the script.
JOBS=${FUZZ_JOBS:-$(nproc)}
logs=build-asan/fuzz-logs
rm -rf "$logs" && mkdir -p "$logs"
run_one() {  # run_one FUZZER_PATH
  local f=$1 name work real s rc=0
  name=$(basename "$f")
  work=build-asan/corpus/$name
  mkdir -p "$work"
  local seeds=()
  [ -d "fuzz/corpus/$name" ] && seeds+=("fuzz/corpus/$name")
  real=build-asan/seeds/$name
  mkdir -p "$real"
  for s in $(seed_files "$name"); do
    if [ -f "$s" ]; then cp -f "$s" "$real/"; fi
  done
  seeds+=("$real")
  "$f" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
       -print_final_stats=1 "$work" "${seeds[@]}" > "$logs/$name.full" 2>&1 || rc=$?
  { echo "[fuzz] $name for ${SECONDS_EACH}s"; tail -n 12 "$logs/$name.full"; } > "$logs/$name.txt"
  echo "$rc" > "$logs/$name.rc"
}
fuzzers=()
for f in build-asan/fuzz/fuzz_*; do
  [ -x "$f" ] && fuzzers+=("$f")
done
lane() {  # lane K: fuzzers K, K + JOBS, K + 2 JOBS, ...
  local i
  for ((i = $1; i < ${#fuzzers[@]}; i += JOBS)); do run_one "${fuzzers[$i]}"; done
}
pids=()
for ((k = 0; k < JOBS; k++)); do lane "$k" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
fail=0
for f in "${fuzzers[@]}"; do
  name=$(basename "$f")
  cat "$logs/$name.txt"
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo missing)
  if [ "$rc" != 0 ]; then echo "[fuzz] $name FAILED (exit $rc), whole log: $logs/$name.full"; fail=1; fi
done
exit $fail
