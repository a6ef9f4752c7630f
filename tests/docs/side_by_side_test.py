#!/usr/bin/python3
"""scripts/side_by_side.py with the real offgraph on stories260K and a stand-in
llama-bench (a script that prints llama-bench's JSON and logs its arguments): the
table pairs each thread count's prefill and decode with the right ratios, the
stand-in got llama-bench's flags (the older spelling after the newer one fails),
and bad inputs are one line and exit 1.
Usage: side_by_side_test.py REPO_ROOT OFFGRAPH MODEL"""

import os
import stat
import subprocess
import sys
import tempfile

root, offgraph, model = sys.argv[1:4]
if not os.path.isfile(model):
    sys.exit(f"side_by_side_test: the test model is missing: {model}")
script = os.path.join(root, "scripts", "side_by_side.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


# The stand-in refuses "-lm" as an older llama-bench does, then answers 50 tok/s
# for prefill and 5 for decode; it logs each call's arguments.
FAKE = r'''#!/bin/sh
echo "$@" >> "$0.log"
case " $* " in *" -lm "*) echo "error: invalid parameter for argument: -lm" >&2; exit 1;; esac
t=0; p=0; n=0
while [ $# -gt 0 ]; do case "$1" in -t) t=$2;; -p) p=$2;; -n) n=$2;; esac; shift; done
printf '[{"build_commit": "abc1234", "n_prompt": %s, "n_gen": 0, "n_threads": %s, "avg_ts": 50.0},' "$p" "$t"
printf ' {"build_commit": "abc1234", "n_prompt": 0, "n_gen": %s, "n_threads": %s, "avg_ts": 5.0}]\n' "$n" "$t"
'''

with tempfile.TemporaryDirectory() as d:
    fake = os.path.join(d, "llama-bench")
    with open(fake, "w") as f:
        f.write(FAKE)
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
    base = [sys.executable, script, "--offgraph", offgraph, "--llama-bench", fake, "--model", model]
    r = subprocess.run(base + ["-t", "1,2", "-p", "16", "-n", "4", "-r", "1"], capture_output=True, text=True)
    check(r.returncode == 0, f"a good run exits 0 ({r.returncode}): {r.stderr}")
    lines = r.stdout.splitlines()
    rows = [l for l in lines if l.startswith("| pp") or l.startswith("| tg")]
    check([l.split("|")[1].strip() for l in rows] == ["pp16, 1 thread", "tg4, 1 thread", "pp16, 2 threads",
                                                     "tg4, 2 threads"], f"rows: {rows}")
    for l in rows:
        cells = [c.strip() for c in l.split("|")[1:-1]]
        ours, theirs, ratio = float(cells[1].split()[0]), float(cells[2].split()[0]), cells[3]
        check(theirs == (50.0 if cells[0].startswith("pp") else 5.0), f"llama.cpp's figure: {l}")
        # The table rounds tok/s to 0.1 and the ratio to 0.01, both from the unrounded figures.
        check(ours > 0 and ratio.endswith("x") and abs(float(ratio[:-1]) - ours / theirs) <= 0.05 / theirs + 0.0051,
              f"ratio: {l}")
    check("llama.cpp: abc1234" in lines[0] and "offgraph table:" in lines[0], f"header: {lines[:1]}")
    with open(fake + ".log") as f:
        calls = f.read().splitlines()
    check(len(calls) == 4 and "-lm none" in calls[0] and "-mmp 0" in calls[1] and "-o json" in calls[1],
          f"llama-bench calls: {calls}")
    for args, words in (([], "not an executable file"), (["-t", "x"], "positive whole numbers"),
                        (["-r", "0"], "-r must be at least 1")):
        cmd = list(base)
        if not args:
            cmd[cmd.index(fake)] = os.path.join(d, "missing")
        r = subprocess.run(cmd + args, capture_output=True, text=True)
        check(r.returncode == 1 and words in r.stderr and r.stderr.count("\n") == 1, f"{args}: {r.stderr!r}")
    r = subprocess.run(base[:-2] + ["--model", os.path.join(d, "none.gguf")], capture_output=True, text=True)
    check(r.returncode == 1 and "no such file" in r.stderr, f"missing model: {r.stderr!r}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("side_by_side_test: ok")
