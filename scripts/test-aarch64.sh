#!/usr/bin/env bash
# Runs the AArch64 cross build (build-aarch64/, made by scripts/cross-aarch64.sh)
# under qemu-user on an x86-64 host: for each emulated CPU (cortex-a57: ARMv8.0
# NEON only; neoverse-n1: + dot product; max: + i8mm, BF16, SVE), the table
# the HWCAP bits select, the kernel unit tests, and stories260K's greedy
# continuation, which must equal the x86 build's (build/offgraph, built if
# missing) byte for byte. Emulated, so it checks correctness only: its
# timings say nothing of speed on ARM hardware. Prints its wall and CPU time.
#   QUICK=1: only the table tests of test_kernels (*IsaTable*, *EachTable*:
#            which tables run, each against the reference) under each CPU,
#            not the whole set (which takes tens of minutes under qemu).
#   argument `ci`: what scripts/test.sh runs, after `scripts/cross-aarch64.sh ci`
#            built only the kernel and KV libraries and their tests (the
#            whole cross build takes ~15 min on 2 cores): test_kernels under
#            each CPU without the *Repacked* tests (minutes under qemu:
#            their long rows and 512-row batches against a double
#            reference; the ARM tables' repacked layouts are held in CI by
#            EachTable and IsaTables.ArmInterleaved*, docs/arm.md) and
#            test_kv under cortex-a57 (without its two
#            slow cases, which test no kernel). No offgraph, so
#            no stories260K check: that is the default mode, outside CI.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build-aarch64
if [ "${1:-}" = ci ]; then
  t0=$(date +%s)
  for f in "$B/tests/test_kernels" "$B/tests/test_kv"; do
    [ -x "$f" ] || { echo "test-aarch64: no $f (run scripts/cross-aarch64.sh ci first)" >&2; exit 1; }
  done
  command -v qemu-aarch64-static >/dev/null || { echo "test-aarch64: no qemu-aarch64-static (scripts/cross-aarch64.sh installs it)" >&2; exit 1; }
  # The runs are mostly one thread each: two at a time keep both cores busy.
  # Each writes its report to $B/ci.<n>.txt and its status to ci.<n>.rc.
  run() {  # run N CPU PROGRAM FILTER
    local log="$B/$(basename "$3").$2.log" t=$(date +%s) rc=0
    qemu-aarch64-static -cpu "$2" "$3" --gtest_brief=1 --gtest_filter="$4" > "$log" 2>&1 || rc=$?
    {
      if [ $rc = 0 ]; then
        echo "  ok: -cpu $2 $(basename "$3") ($4), $(( $(date +%s) - t )) s: $(grep '^\[  PASSED' "$log")"
        grep '^\[  SKIPPED \]' "$log" | sed 's/^/    /' || true
      else
        echo "  FAIL: -cpu $2 $(basename "$3") ($4), exit $rc, see $log"; tail -20 "$log"
      fi
      grep "^\[ isa \]" "$log" | sed 's/^/    /' || true
    } > "$B/ci.$1.txt"
    echo $rc > "$B/ci.$1.rc"
  }
  rm -f "$B"/ci.*.txt "$B"/ci.*.rc
  # test_kv without its two slow cases (3 and 1.3 min under qemu: memory
  # formulas over many shapes and huge-page buffers, no kernel code).
  kv_filter="*:-KvCases.Gemma3MemoryFormula:KvCases.HugePageBuffersMatchReference"
  { run 1 max "$B/tests/test_kernels" "*:-*Repacked*"; run 2 cortex-a57 "$B/tests/test_kv" "$kv_filter"; } &
  run 3 neoverse-n1 "$B/tests/test_kernels" "*:-*Repacked*"
  run 4 cortex-a57 "$B/tests/test_kernels" "*:-*Repacked*"
  wait
  fail=0
  for n in 1 2 3 4; do cat "$B/ci.$n.txt"; [ "$(cat "$B/ci.$n.rc")" = 0 ] || fail=1; done
  echo "test-aarch64 (CI): wall $(( $(date +%s) - t0 )) s"
  [ $fail = 0 ] && { echo "test-aarch64 (CI): all passed"; exit 0; } || { echo "test-aarch64 (CI): FAILED"; exit 1; }
fi
MODEL=../shared/testdata/models/stories260K/stories260K.gguf
# No -L /usr/aarch64-linux-gnu: the programs load libc6:arm64's loader and C
# library (cmake/aarch64-linux-gnu.cmake says why mixing them hangs).
QEMU=(qemu-aarch64-static)
t0=$(date +%s)
[ -f "$MODEL" ] || { echo "test-aarch64: missing test data $MODEL" >&2; exit 1; }
for f in "$B/offgraph" "$B/tests/test_kernels"; do
  [ -x "$f" ] || { echo "test-aarch64: no $f (run scripts/cross-aarch64.sh first)" >&2; exit 1; }
done
command -v qemu-aarch64-static >/dev/null || { echo "test-aarch64: no qemu-aarch64-static (scripts/cross-aarch64.sh installs it)" >&2; exit 1; }
[ -x build/offgraph ] || scripts/build.sh offgraph

fail=0
check() {  # check NAME WANT GOT
  if [ "$2" == "$3" ]; then echo "  ok: $1"; else echo "  FAIL: $1: expected [$2], got [$3]"; fail=1; fi
}

run_args=(run --model "$MODEL" --prompt "Once upon a time" --max-new-tokens 60 --chat 0)
x86_text=$(build/offgraph "${run_args[@]}" 2>/dev/null)
[ -n "$x86_text" ] || { echo "test-aarch64: build/offgraph gave no text" >&2; exit 1; }

declare -A best=([cortex-a57]=neon [neoverse-n1]=dotprod [max]=i8mm)
for cpu in cortex-a57 neoverse-n1 max; do
  echo "== qemu -cpu $cpu"
  # The table chosen from HWCAP: `--version` prints "...; in use: <table>".
  summary=$("${QEMU[@]}" -cpu "$cpu" "$B/offgraph" --version | grep "instruction sets:")
  echo "  $summary"
  check "table in use" "${best[$cpu]}" "${summary##*in use: }"
  filter="*"
  [ "${QUICK:-0}" = 1 ] && filter="*IsaTable*:*EachTable*"
  if "${QEMU[@]}" -cpu "$cpu" "$B/tests/test_kernels" --gtest_brief=1 --gtest_filter="$filter" > "$B/test_kernels.$cpu.log" 2>&1; then
    echo "  ok: test_kernels ($filter): $(grep '^\[  PASSED' "$B/test_kernels.$cpu.log")"
    grep '^\[  SKIPPED \]' "$B/test_kernels.$cpu.log" | sed 's/^/  /' || true
  else
    echo "  FAIL: test_kernels ($filter), see $B/test_kernels.$cpu.log"; tail -20 "$B/test_kernels.$cpu.log"; fail=1
  fi
  grep "^\[ isa \]" "$B/test_kernels.$cpu.log" | sed 's/^/  /' || true
  # stories260K's greedy continuation with every table this CPU has.
  for isa in scalar neon dotprod i8mm; do
    case "$cpu:$isa" in cortex-a57:dotprod|cortex-a57:i8mm|neoverse-n1:i8mm) continue;; esac
    got=$(OFFGRAPH_ISA=$isa "${QEMU[@]}" -cpu "$cpu" "$B/offgraph" "${run_args[@]}" 2>/dev/null) || { echo "  FAIL: run $isa exited $?"; fail=1; continue; }
    check "stories260K greedy text, OFFGRAPH_ISA=$isa, equals the x86 build's" "$x86_text" "$got"
  done
done
# The int8 kernels end to end: stories260K quantized (by the x86 build) to
# types the dotprod and i8mm tables have kernels for. Those two tables give
# the same bits (docs/arm.md), so their greedy texts must be equal.
dotprod_vs_i8mm() {  # dotprod_vs_i8mm MODEL_FILE DESCRIPTION
  local qa a b
  qa=("${run_args[@]}"); qa[2]="$1"
  a=$(OFFGRAPH_ISA=dotprod "${QEMU[@]}" -cpu max "$B/offgraph" "${qa[@]}" 2>/dev/null) || a="(exit $?)"
  b=$(OFFGRAPH_ISA=i8mm "${QEMU[@]}" -cpu max "$B/offgraph" "${qa[@]}" 2>/dev/null) || b="(exit $?)"
  [ -n "$a" ] || a="(no text)"
  check "$2 under -cpu max: i8mm's greedy text equals dotprod's" "$a" "$b"
}
for t in q8_0 q4_0 q5_1 iq4_nl mxfp4; do
  q="$B/stories260K-$t.gguf"
  [ -f "$q" ] || build/offgraph quantize "$MODEL" "$q" "$t" -q --no-progress
  dotprod_vs_i8mm "$q" "stories260K as $t"
done
# The K-quant kernels end to end (stories260K's 64-wide rows cannot hold their
# 256-value blocks): a random tiny Llama 256 wide, written by the x86 og-synth
# in the mixes `offgraph quantize` makes (Q4_K/Q6_K repacked to their R16
# layouts, Q5_K to Q5_K_R, Q3_K in file order; docs/arm.md). Random weights
# leave near-ties that other summation orders flip, so only dotprod and i8mm,
# which give the same bits, are compared.
[ -x build/og-synth ] || scripts/build.sh og-synth
for t in q4_k_m q5_k_m q6_k q3_k_m; do
  q="$B/synth-$t.gguf"
  [ -f "$q" ] || build/og-synth --family llama --format gguf --preset tiny --d-model 256 --d-ff 512 --heads 4 \
    --head-dim 64 --kv-heads 2 --dtype "$t" --out "$q" >/dev/null
  dotprod_vs_i8mm "$q" "a 256-wide synthetic Llama as $t"
done
# A table the CPU lacks is the usage error (exit 2), as on x86.
rc=0; OFFGRAPH_ISA=i8mm "${QEMU[@]}" -cpu cortex-a57 "$B/offgraph" "${run_args[@]}" >/dev/null 2>"$B/isa_err.log" || rc=$?
check "OFFGRAPH_ISA=i8mm on cortex-a57 exits 2 ($(head -1 "$B/isa_err.log"))" 2 "$rc"
rc=0; OFFGRAPH_ISA=avx2 "${QEMU[@]}" -cpu max "$B/offgraph" "${run_args[@]}" >/dev/null 2>"$B/isa_err.log" || rc=$?
check "OFFGRAPH_ISA=avx2 on aarch64 exits 2 ($(head -1 "$B/isa_err.log"))" 2 "$rc"

times > "$B/times.txt"  # not in a pipe: a subshell's `times` has no children
cpu=$(tail -1 "$B/times.txt" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t[i] = a[1] * 60 + a[2] }
                                    printf "user %.0f s, system %.0f s", t[1], t[2] }')
echo "test-aarch64: wall $(( $(date +%s) - t0 )) s; CPU of the programs it ran: $cpu"
[ $fail = 0 ] && echo "test-aarch64: all passed" || { echo "test-aarch64: FAILED"; exit 1; }
