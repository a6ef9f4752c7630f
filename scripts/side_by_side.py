#!/usr/bin/env python3
"""offgraph beside llama.cpp on the machine at hand: the table docs/performance.md keeps.

For a user with hardware this project has no numbers for (an ARM server, a Mac, a
desktop without AVX-512; issue 45): it runs `offgraph bench` and llama.cpp's own
`llama-bench` on the same GGUF file, one after the other for each thread count
(prefill pp and decode tg), and prints a markdown table with the ratios and what ran
(CPU, kernel table, llama.cpp's commit, the load). llama.cpp is built by the user,
outside this repository; this script only runs it.

  scripts/side_by_side.py --llama-bench ~/llama.cpp/build/bin/llama-bench
  scripts/side_by_side.py --llama-bench B --model M.gguf -t 1,4,8 -p 512 -n 64 -r 3

Without --model it writes the Llama-3.2-1B-shaped Q4_K_M file the docs use with
og-synth (random weights, ~0.8 GB, in a temporary directory). Timings move with
anything else running: run it on a quiet machine and compare ratios, not runs.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(f"side_by_side: {msg}", file=sys.stderr)
    sys.exit(1)


def executable(path, what):
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        fail(f"{what} is not an executable file: {path}")
    return path


def positive_list(text, what):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        fail(f"{what} takes positive whole numbers separated by commas, not '{text}'")
    return values


def run_json(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["(no message)"])[-1]
    try:
        return json.loads(r.stdout), ""
    except json.JSONDecodeError:
        return None, "its output is not JSON"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.split(":")[0].strip() in ("model name", "Model", "CPU part"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:  # macOS
        return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                              text=True).stdout.strip() or platform.processor()
    except OSError:
        return platform.processor()


def offgraph_rates(a, model, t):
    cmd = [a.offgraph, "bench", "--model", model, "-p", str(a.p), "-n", str(a.n), "-t", str(t), "-r", str(a.r),
           "--json"]
    env = dict(os.environ)
    if a.isa:
        env["OFFGRAPH_ISA"] = a.isa
    out, err = run_json(cmd, env)
    if out is None:
        fail(f"offgraph bench failed: {err}")
    rates = {r["kind"]: r["tok_s_mean"] for r in out.get("results", [])}
    return rates, out.get("isa", "?")


def llama_rates(a, model, t):
    base = [a.llama_bench, "-m", model, "-p", str(a.p), "-n", str(a.n), "-t", str(t), "-r", str(a.r), "-o", "json"]
    # Newer llama-bench spells its best CPU flags "-fa on -lm none", older ones "-fa 1 -mmp 0".
    for flags in (["-fa", "on", "-lm", "none"], ["-fa", "1", "-mmp", "0"]):
        out, err = run_json(base + flags)
        if out is not None:
            break
    if out is None:
        fail(f"llama-bench failed: {err}")
    rates, commit = {}, "?"
    for r in out:
        commit = r.get("build_commit", commit)
        kind = "prefill" if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0 else "decode"
        rates[kind] = r["avg_ts"]
    return rates, commit


def synth_model(a, directory):
    synth = executable(a.og_synth, "og-synth (--og-synth)")
    path = os.path.join(directory, "llama32-1b-q4_k_m.gguf")
    r = subprocess.run([synth, "--family", "llama", "--format", "gguf", "--preset", "llama32-1b", "--dtype", "q4_k_m",
                        "--tokenizer", "llama3", "--out", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"og-synth failed: {(r.stderr.strip().splitlines() or ['(no message)'])[-1]}")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-bench", required=True, help="llama.cpp's llama-bench (built by you)")
    ap.add_argument("--model", help="the GGUF file both run (default: og-synth's 1B Q4_K_M)")
    ap.add_argument("--offgraph", default=os.path.join(ROOT, "build", "offgraph"))
    ap.add_argument("--og-synth", default=os.path.join(ROOT, "build", "og-synth"))
    ap.add_argument("--isa", help="OFFGRAPH_ISA for offgraph (default: the best table this CPU has)")
    ap.add_argument("-t", default=None, help="thread counts, e.g. 1,4 (default: 1 and all cores)")
    ap.add_argument("-p", type=int, default=512, help="prompt tokens (prefill test)")
    ap.add_argument("-n", type=int, default=64, help="generated tokens (decode test)")
    ap.add_argument("-r", type=int, default=2, help="repetitions of each test")
    a = ap.parse_args()
    executable(a.offgraph, "offgraph (--offgraph)")
    executable(a.llama_bench, "llama-bench (--llama-bench)")
    cores = os.cpu_count() or 1
    threads = positive_list(a.t, "-t") if a.t else sorted({1, cores})
    for v, name in ((a.p, "-p"), (a.n, "-n"), (a.r, "-r")):
        if v < 1:
            fail(f"{name} must be at least 1")
    if a.model and not os.path.isfile(a.model):
        fail(f"--model: no such file: {a.model}")
    with tempfile.TemporaryDirectory() as d:
        model = a.model or synth_model(a, d)
        rows, isa, commit = [], "?", "?"
        for t in threads:  # each pair back to back
            ours, isa = offgraph_rates(a, model, t)
            theirs, commit = llama_rates(a, model, t)
            for kind, label in (("prefill", f"pp{a.p}"), ("decode", f"tg{a.n}")):
                if kind in ours and kind in theirs:
                    rows.append((f"{label}, {t} thread{'s' if t > 1 else ''}", ours[kind], theirs[kind]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"CPU: {cpu_name()} ({platform.machine()}, {cores} cores, {platform.system()}); offgraph table: {isa}; "
          f"llama.cpp: {commit}; model: {os.path.basename(model)}; load after the runs: {load:.2f}\n")
    print("| test | offgraph | llama.cpp | ratio |")
    print("|---|---|---|---|")
    for label, ours, theirs in rows:
        ratio = f"{ours / theirs:.2f}x" if theirs > 0 else "-"
        print(f"| {label} | {ours:.1f} tok/s | {theirs:.1f} tok/s | {ratio} |")


if __name__ == "__main__":
    main()
