#!/usr/bin/python3
"""scripts/perf_plot.py on the fixture results in tests/docs/fixtures/: the SVG
parses, every pair of bars is there, and the table pairs the same tests (kind,
tokens, depth, sequences, threads) of offgraph and llama.cpp and nothing else.
Usage: perf_plot_test.py REPO_ROOT"""

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(script, args):
    return subprocess.run([sys.executable, script] + args, capture_output=True, text=True, timeout=60)


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    script = os.path.join(repo, "scripts", "perf_plot.py")
    fixtures = os.path.join(repo, "tests", "docs", "fixtures")
    files = sorted(os.path.join(fixtures, n) for n in os.listdir(fixtures))
    with tempfile.TemporaryDirectory() as tmp:
        out_svg = os.path.join(tmp, "summary.svg")
        r = run(script, ["--svg", out_svg, "--title", "fixture <&> title"] + files)
        check(r.returncode == 0, f"exit code {r.returncode}, stderr: {r.stderr}")
        rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| ") and not ln.startswith("| test ")]
        table = {}
        for ln in rows:
            cells = [c.strip() for c in ln.strip("|").split("|")]
            table[cells[0]] = cells[1:]
        expected = {
            "pp512, 2 threads": ["300.0", "100.0", "3.00×"],
            "tg64, 2 threads": ["60.0", "30.0", "2.00×"],
            "tg32 @ d4096, 2 threads": ["50.0", "20.0", "2.50×"],
            "tg64 x8, 2 threads": ["240.0", "60.0", "4.00×"],
            "serve, 8 clients, 544 (512 shared) in, 32 out": ["20.0", "2.5", "8.00×"],
        }
        check(table == expected, f"table {table} != {expected}")
        # Tests only one side ran (llama.cpp's 4 threads, offgraph's 1 thread) and
        # llama-bench's pp+tg test are left out, the first two with a note.
        check("pp512, 4 threads" in r.stderr and "tg64, 1 thread" in r.stderr, f"unpaired not reported: {r.stderr}")
        try:
            root = ET.parse(out_svg).getroot()
        except (ET.ParseError, OSError) as e:
            failures.append(f"SVG does not parse: {e}")
            root = None
        if root is not None:
            ns = "{http://www.w3.org/2000/svg}"
            check(root.tag == ns + "svg", f"root is {root.tag}")
            bars = [e for e in root.iter(ns + "rect") if e.find(ns + "title") is not None]
            check(len(bars) == 2 * len(expected), f"{len(bars)} bars, want {2 * len(expected)}")
            texts = [e.text or "" for e in root.iter(ns + "text")]
            for ratio in ("3.00×", "2.00×", "2.50×", "4.00×", "8.00×"):
                check(ratio in texts, f"ratio {ratio} not written over its pair")
            check("fixture <&> title" in texts, "title not escaped and kept")
            for b in bars:
                check(float(b.get("height")) > 0, f"bar of height {b.get('height')}")

        # Nothing paired, an unreadable file, bad usage: no SVG, exit 1 / 1 / 2.
        lone = os.path.join(tmp, "lone.svg")
        r = run(script, ["--svg", lone, os.path.join(fixtures, "offgraph_bench.json")])
        check(r.returncode == 1 and not os.path.exists(lone), f"one side only: exit {r.returncode}")
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        r = run(script, ["--svg", lone, bad])
        check(r.returncode == 1 and "bad.json" in r.stderr and not os.path.exists(lone),
              f"bad JSON: exit {r.returncode}, {r.stderr}")
        r = run(script, ["--no-such-flag"])
        check(r.returncode == 2, f"bad usage: exit {r.returncode}")
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        r = run(script, ["--data", empty, "--svg", lone])
        check(r.returncode == 1 and "README" in r.stderr, f"empty data folder: exit {r.returncode}")
    for f in failures:
        print("FAIL:", f)
    print("perf_plot_test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
