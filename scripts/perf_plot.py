#!/usr/bin/python3
"""Pairs offgraph's benchmark results with llama.cpp's and draws the summary.

Reads the JSON files the benches write (docs/perf/data/README.md has the exact
commands) and writes docs/perf/summary.svg: grouped bars, offgraph against
llama.cpp in tokens/s per test, the ratio over each pair. A markdown table of
the same pairs goes to stdout. Standard library only; the SVG is written by hand.

Input kinds, recognised by their shape:
  offgraph bench --json        {"model", "isa", "results": [{"kind", "n_prompt", "n_gen",
                               "depth", "n_seqs", "threads", "tok_s_mean", ...}]}
  llama-bench -o json          [{"model_filename", "n_prompt", "n_gen", "n_depth"?,
                               "n_threads", "avg_ts", "stddev_ts", ...}]
  llama-batched-bench --output-format jsonl
                               one JSON object a line (other lines skipped): {"pp", "tg", "pl", "n_threads",
                               "speed_tg", ...}; each line is a decode test of pl sequences
  serve_bench.mjs --json       {"concurrency", "input_len", "prefix_len", "output_len",
                               "output_tok_s", ...}; the server is told by the file name,
                               which starts with serve-offgraph or serve-llama

A test is the same on both sides when its kind, tokens, depth, sequences and
threads agree (and, when either side ran more than one model file, the model
file's name without extension). Several results for one test on one side (more
passes) are averaged. Exit codes: 0 written, 1 unreadable input or nothing
paired, 2 bad usage.
"""

import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape

OURS, PEER = "offgraph", "llama.cpp"


class InputError(Exception):
    pass


def model_label(path):
    name = os.path.basename(str(path or ""))
    for ext in (".gguf", ".bin"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name


def number(obj, key, where, default=None):
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if default is not None and key not in obj:
            return default
        raise InputError(f"{where}: field '{key}' is missing or not a number")
    return v


def bench_key(kind, tokens, depth, seqs, threads):
    return (kind, int(tokens), int(depth), int(seqs), int(threads))


def read_offgraph_bench(doc, where):
    out = []
    model = model_label(doc.get("model"))
    for i, r in enumerate(doc["results"]):
        w = f"{where}: results[{i}]"
        if not isinstance(r, dict):
            raise InputError(f"{w}: not an object")
        kind = r.get("kind")
        if kind not in ("prefill", "decode"):
            raise InputError(f"{w}: kind must be prefill or decode")
        tokens = number(r, "n_prompt" if kind == "prefill" else "n_gen", w)
        key = bench_key(kind, tokens, number(r, "depth", w, 0), number(r, "n_seqs", w, 1),
                        number(r, "threads", w))
        out.append((OURS, model, key, float(number(r, "tok_s_mean", w))))
    return out


def read_llama_bench(doc, where):
    out = []
    for i, r in enumerate(doc):
        w = f"{where}: [{i}]"
        if not isinstance(r, dict):
            raise InputError(f"{w}: not an object")
        n_prompt, n_gen = number(r, "n_prompt", w), number(r, "n_gen", w)
        if n_prompt > 0 and n_gen > 0:
            continue  # a pp+tg test has no offgraph twin
        kind, tokens = ("prefill", n_prompt) if n_prompt > 0 else ("decode", n_gen)
        key = bench_key(kind, tokens, number(r, "n_depth", w, 0), 1, number(r, "n_threads", w))
        out.append((PEER, model_label(r.get("model_filename")), key, float(number(r, "avg_ts", w))))
    return out


def read_batched_bench(rows, where):
    out = []
    for i, r in enumerate(rows):
        w = f"{where}: line {i + 1}"
        key = bench_key("decode", number(r, "tg", w), 0, number(r, "pl", w), number(r, "n_threads", w))
        out.append((PEER, "", key, float(number(r, "speed_tg", w))))
    return out


def read_serve_bench(doc, where, path):
    name = os.path.basename(path)
    if name.startswith("serve-offgraph"):
        side = OURS
    elif name.startswith("serve-llama"):
        side = PEER
    else:
        raise InputError(f"{where}: a serve_bench report's file name must start with serve-offgraph or serve-llama")
    key = ("serve", int(number(doc, "input_len", where)), int(number(doc, "prefix_len", where)),
           int(number(doc, "output_len", where)), int(number(doc, "concurrency", where)))
    return [(side, "", key, float(number(doc, "output_tok_s", where)))]


def read_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        # llama-batched-bench may print log lines among its JSON lines: only "{...}" lines count.
        lines = [ln for ln in text.splitlines() if ln.strip().startswith("{")]
        try:
            rows = [json.loads(ln) for ln in lines]
        except json.JSONDecodeError:
            raise InputError(f"{path}: not JSON ({e.msg} at line {e.lineno})")
        if rows and all(isinstance(r, dict) and "speed_tg" in r for r in rows):
            return read_batched_bench(rows, path)
        raise InputError(f"{path}: JSON lines that are not llama-batched-bench's")
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        return read_offgraph_bench(doc, path)
    if isinstance(doc, list) and all(isinstance(r, dict) and "avg_ts" in r for r in doc):
        return read_llama_bench(doc, path)
    if isinstance(doc, dict) and "speed_tg" in doc:
        return read_batched_bench([doc], path)
    if isinstance(doc, dict) and "output_tok_s" in doc:
        return read_serve_bench(doc, path, path)
    raise InputError(f"{path}: not a result of offgraph bench, llama-bench, llama-batched-bench or serve_bench")


def test_label(key):
    if key[0] == "serve":
        _, inp, prefix, outp, conc = key
        shared = f" ({prefix} shared)" if prefix else ""
        return f"serve, {conc} clients, {inp}{shared} in, {outp} out"
    kind, tokens, depth, seqs, threads = key
    name = f"pp{tokens}" if kind == "prefill" else f"tg{tokens}"
    if seqs > 1:
        name += f" x{seqs}"
    if depth > 0:
        name += f" @ d{depth}"
    return f"{name}, {threads} thread{'s' if threads != 1 else ''}"


def pair(records):
    """[(side, model, key, tok_s)] -> sorted [(model, key, ours_mean, peer_mean)], unpaired keys."""
    models = {side: {m for s, m, k, _ in records if s == side and k[0] != "serve"} for side in (OURS, PEER)}
    by_model = len(models[OURS] - {""}) > 1 or len(models[PEER] - {""}) > 1
    sums = {}
    for side, model, key, tok_s in records:
        m = model if by_model and key[0] != "serve" else ""
        sums.setdefault((m, key), {}).setdefault(side, []).append(tok_s)
    pairs, unpaired = [], []
    for (m, key), sides in sums.items():
        if OURS in sides and PEER in sides:
            mean = lambda v: sum(v) / len(v)
            pairs.append((m, key, mean(sides[OURS]), mean(sides[PEER])))
        else:
            unpaired.append((m, key, OURS if OURS in sides else PEER))
    order = {"prefill": 0, "decode": 1, "serve": 2}
    def rank(p):
        key = p[1]
        if key[0] == "serve":
            return (p[0], 2, key[4], key[1:4])
        kind, tokens, depth, seqs, threads = key
        return (p[0], order[kind], seqs, depth, threads, tokens)
    pairs.sort(key=rank)
    return pairs, unpaired


def markdown(pairs):
    lines = ["| test | offgraph tok/s | llama.cpp tok/s | ratio |", "|---|---|---|---|"]
    for model, key, ours, peer in pairs:
        label = test_label(key) + (f" ({model})" if model else "")
        ratio = f"{ours / peer:.2f}×" if peer > 0 else "n/a"
        lines.append(f"| {label} | {ours:.1f} | {peer:.1f} | {ratio} |")
    return "\n".join(lines) + "\n"


def svg(pairs, title):
    """Grouped bars on a log scale (tests range from tens to hundreds of tok/s)."""
    bar, gap, group_gap = 26, 4, 34
    labels = [test_label(key) + (f" ({model})" if model else "") for model, key, _, _ in pairs]
    # Room under the axis for the slanted labels (~6.5 px a character at 12 px, 35 degrees).
    left, right, top = 70, 20, 70
    bottom = 40 + int(max(len(s) for s in labels) * 6.5 * math.sin(math.radians(35)))
    plot_h = 300
    group_w = 2 * bar + gap
    legend = "tokens/s, log scale; ratio over each pair"
    # As wide as the bars, the legend (~6.6 px a character at 12 px) and the title (~8.5 px at 15 px).
    width = max(left + right + len(pairs) * group_w + (len(pairs) + 1) * group_gap,
                int(left + 220 + 6.6 * len(legend) + right), int(8.5 * len(title) + 40))
    height = top + plot_h + bottom
    values = [v for p in pairs for v in p[2:] if v > 0]
    # The axis starts at least a factor 2 below the smallest bar, so no bar is a sliver.
    lo = 10 ** math.floor(math.log10(min(values) / 2))
    hi = 10 ** math.ceil(math.log10(max(values)))
    if hi <= lo:
        hi = lo * 10

    def y(v):
        v = max(v, lo)
        return top + plot_h - plot_h * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    colors = {OURS: "#2b6cb0", PEER: "#dd8a2e"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{width / 2:.1f}" y="24" text-anchor="middle" font-size="15">{escape(title)}</text>']
    # Legend.
    lx = left
    for side in (OURS, PEER):
        out.append(f'<rect x="{lx}" y="38" width="12" height="12" fill="{colors[side]}"/>')
        out.append(f'<text x="{lx + 16}" y="48">{escape(side)}</text>')
        lx += 110
    out.append(f'<text x="{lx}" y="48" fill="#555555">{legend}</text>')
    # Axis and grid: one line per power of ten.
    decade = lo
    while decade <= hi * 1.0001:
        gy = y(decade)
        out.append(f'<line x1="{left}" y1="{gy:.1f}" x2="{width - right}" y2="{gy:.1f}" stroke="#dddddd"/>')
        out.append(f'<text x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">{decade:g}</text>')
        decade *= 10
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333333"/>')
    out.append(f'<text x="16" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">tokens/s</text>')
    for i, (model, key, ours, peer) in enumerate(pairs):
        x0 = left + group_gap + i * (group_w + group_gap)
        for j, (side, v) in enumerate(((OURS, ours), (PEER, peer))):
            bx, by = x0 + j * (bar + gap), y(v)
            out.append(f'<rect x="{bx}" y="{by:.1f}" width="{bar}" height="{top + plot_h - by:.1f}" '
                       f'fill="{colors[side]}"><title>{escape(side)}: {v:.1f} tok/s</title></rect>')
        ratio = f"{ours / peer:.2f}×" if peer > 0 else "n/a"
        ry = min(y(ours), y(peer)) - 6
        out.append(f'<text x="{x0 + group_w / 2:.1f}" y="{ry:.1f}" text-anchor="middle" '
                   f'font-weight="bold">{ratio}</text>')
        label = labels[i]
        lx, ly = x0 + group_w / 2, top + plot_h + 14
        out.append(f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="end" '
                   f'transform="rotate(-35 {lx:.1f} {ly:.1f})">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description="offgraph against llama.cpp: docs/perf/summary.svg and a markdown table")
    ap.add_argument("files", nargs="*", help="result files (default: every *.json and *.jsonl in --data)")
    ap.add_argument("--data", default=os.path.join(repo, "docs", "perf", "data"), help="folder of result files")
    ap.add_argument("--svg", default=os.path.join(repo, "docs", "perf", "summary.svg"), help="SVG to write")
    ap.add_argument("--title", default="offgraph and llama.cpp, same model file and threads",
                    help="the plot's title (name the machine and the commit)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    files = args.files
    if not files:
        if not os.path.isdir(args.data):
            print(f"perf_plot: {args.data}: no such folder", file=sys.stderr)
            return 1
        files = sorted(os.path.join(args.data, n) for n in os.listdir(args.data)
                       if n.endswith(".json") or n.endswith(".jsonl"))
    if not files:
        print(f"perf_plot: no result files in {args.data} (its README.md says how to make them)", file=sys.stderr)
        return 1
    records = []
    try:
        for path in files:
            records += read_file(path)
    except InputError as e:
        print(f"perf_plot: {e}", file=sys.stderr)
        return 1
    pairs, unpaired = pair(records)
    for model, key, side in unpaired:
        print(f"perf_plot: only {side} ran {test_label(key)}{f' ({model})' if model else ''}; left out",
              file=sys.stderr)
    if not pairs:
        print("perf_plot: no test was run by both offgraph and llama.cpp", file=sys.stderr)
        return 1
    tmp = args.svg + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(svg(pairs, args.title))
        os.replace(tmp, args.svg)
    except OSError as e:
        print(f"perf_plot: {args.svg}: cannot write: {e.strerror}", file=sys.stderr)
        return 1
    sys.stdout.write(markdown(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
