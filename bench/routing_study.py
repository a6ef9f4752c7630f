#!/usr/bin/python3
"""Routing study: N local `offgraph serve` replicas, one multi-tenant trace,
routed two ways, compared.

  round-robin  each request to the next replica in turn;
  prefix       each request to the replica holding the longest cached prefix
               of its prompt, known from the replicas' own KV events (the
               way llm-d's precise prefix-cache scorer knows it): a
               subscriber per replica keeps the set of block hashes it has
               stored and not removed; a prompt's score on a replica is the
               number of its leading full blocks in that set (hashed as
               vLLM's sha256_cbor does); ties go to the replica with the
               fewest requests in flight.

The trace: --tenants system prompts of --system-len tokens; per tenant
--users chats of --turns turns; each turn's prompt is the system prompt, the
chat so far (each earlier user message of --user-len tokens and a reply of
--output-len tokens) and the new user message, sent as token ids to
/v1/completions (streamed, ignore_eos) by --concurrency clients, each chat's
turns in order. Fresh replicas for each policy (empty caches).

Reports per policy: the prefix hit rate (prompt tokens taken from the
replicas' caches / prompt tokens), time to first token (mean, p50, p90),
requests/s and output tokens/s over the wall time.

Needs Debian's python3-zmq, python3-msgpack and python3-cbor2 (scripts/setup.sh
installs them). Loopback only; every process it starts is stopped on exit.
"""
import argparse
import hashlib
import json
import os
import random
import re
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import cbor2
import msgpack
import zmq


def sha256_cbor(value):
    return hashlib.sha256(cbor2.dumps(value, canonical=True)).digest()


def block_hashes(tokens, block_size, seed):
    """The low 64 bits of each full block's hash (vLLM's int form in events)."""
    parent = sha256_cbor(seed)
    out = []
    for b in range(len(tokens) // block_size):
        parent = sha256_cbor((parent, tuple(tokens[b * block_size:(b + 1) * block_size]), None))
        out.append(int.from_bytes(parent, "big") & ((1 << 64) - 1))
    return out


class Replica:
    def __init__(self, args, index):
        self.index = index
        # The subscriber binds (loopback) and the replica connects to it: an
        # endpoint without '*' is connected, as in vLLM.
        self.sub = zmq.Context.instance().socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.setsockopt(zmq.RCVTIMEO, 200)
        self.events_port = self.sub.bind_to_random_port("tcp://127.0.0.1")
        self.blocks = set()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.events_seen = 0
        cmd = [args.offgraph, "serve", "--model", args.model, "--host", "127.0.0.1", "--port", "0",
               "--threads", str(args.threads), "--parallel", str(args.parallel),
               "--prefix-cache-entries", str(args.prefix_cache_entries), "--block-size", str(args.block_size),
               "--prefix-hash-seed", args.seed_hash, "--kv-max-capacity", str(args.max_tokens),
               "--kv-events-endpoint", f"tcp://127.0.0.1:{self.events_port}"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 180
        self.port = 0
        seen = []
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            m = re.search(r"ready on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if not self.port:
            self.stop()
            sys.exit(f"replica {index} did not start:\n" + "".join(seen[-20:]))
        # Keep draining its output so that it never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        self.stop_events = threading.Event()
        self.listener = threading.Thread(target=self.listen, daemon=True)
        self.listener.start()

    def listen(self):
        sub = self.sub
        while not self.stop_events.is_set():
            try:
                parts = sub.recv_multipart()
            except zmq.Again:
                continue
            batch = msgpack.unpackb(parts[-1], raw=False)
            for ev in batch[1]:
                tag = ev[0]
                with self.lock:
                    self.events_seen += 1
                    if tag == "BlockStored":
                        self.blocks.update(h if isinstance(h, int) else int.from_bytes(h[-8:], "big") for h in ev[1])
                    elif tag == "BlockRemoved":
                        self.blocks.difference_update(
                            h if isinstance(h, int) else int.from_bytes(h[-8:], "big") for h in ev[1])
                    elif tag == "AllBlocksCleared":
                        self.blocks.clear()
        sub.close(linger=0)

    def score(self, hashes):
        with self.lock:
            n = 0
            for h in hashes:
                if h not in self.blocks:
                    break
                n += 1
            return n

    def stop(self):
        if getattr(self, "stop_events", None):
            self.stop_events.set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def make_trace(args):
    rng = random.Random(args.seed)
    vocab = lambda n: [rng.randrange(10, args.vocab_max) for _ in range(n)]
    chats = []
    for t in range(args.tenants):
        system = vocab(args.system_len)
        for u in range(args.users):
            turns, history = [], list(system)
            for _ in range(args.turns):
                user = vocab(args.user_len)
                turns.append(history + user)
                history = history + user + vocab(args.output_len)  # the reply, as the chat keeps it
            chats.append(turns)
    return chats


def post_stream(port, prompt, output_len):
    body = json.dumps({"prompt": prompt, "max_tokens": output_len, "ignore_eos": True, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    ttft, usage = None, None
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if ttft is None and chunk.get("choices") and chunk["choices"][0].get("text"):
                ttft = time.perf_counter() - start
            if chunk.get("usage"):
                usage = chunk["usage"]
    if usage is None:
        raise RuntimeError("no usage in the stream")
    return ttft if ttft is not None else time.perf_counter() - start, usage


def run_policy(args, policy, chats):
    replicas = []
    try:
        for i in range(args.replicas):
            replicas.append(Replica(args, i))
        rr = [0]
        pick_lock = threading.Lock()
        results = []

        def route(prompt):
            with pick_lock:
                if policy == "round-robin":
                    r = replicas[rr[0] % len(replicas)]
                    rr[0] += 1
                else:
                    hashes = block_hashes(prompt, args.block_size, args.seed_hash)
                    r = max(replicas, key=lambda x: (x.score(hashes), -x.in_flight, -x.index))
                r.in_flight += 1
                return r

        def run_chat(turns):
            for prompt in turns:
                r = route(prompt)
                try:
                    ttft, usage = post_stream(r.port, prompt, args.output_len)
                finally:
                    with pick_lock:
                        r.in_flight -= 1
                cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
                results.append((ttft, usage["prompt_tokens"], cached, usage["completion_tokens"], r.index))

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            for f in [pool.submit(run_chat, c) for c in chats]:
                f.result()
        wall = time.perf_counter() - start
        ttfts = sorted(x[0] for x in results)
        prompt_tokens = sum(x[1] for x in results)
        cached = sum(x[2] for x in results)
        out = {
            "policy": policy,
            "requests": len(results),
            "prefix_hit_rate": cached / prompt_tokens if prompt_tokens else 0.0,
            "ttft_mean_s": statistics.mean(ttfts),
            "ttft_p50_s": ttfts[len(ttfts) // 2],
            "ttft_p90_s": ttfts[min(len(ttfts) - 1, int(len(ttfts) * 0.9))],
            "requests_per_s": len(results) / wall,
            "output_tokens_per_s": sum(x[3] for x in results) / wall,
            "wall_s": wall,
            "per_replica": [sum(1 for x in results if x[4] == i) for i in range(args.replicas)],
            "events_seen": sum(r.events_seen for r in replicas),
        }
        return out
    finally:
        for r in replicas:
            r.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--offgraph", default=os.path.join(os.path.dirname(__file__), "..", "build", "offgraph"))
    p.add_argument("--model", required=True)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per replica")
    p.add_argument("--parallel", type=int, default=4, help="sessions per replica")
    p.add_argument("--prefix-cache-entries", type=int, default=8)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--seed-hash", default="0", help="--prefix-hash-seed of the replicas")
    p.add_argument("--max-tokens", type=int, default=2048, help="--kv-max-capacity of the replicas")
    p.add_argument("--tenants", type=int, default=4)
    p.add_argument("--users", type=int, default=2)
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--system-len", type=int, default=256)
    p.add_argument("--user-len", type=int, default=48)
    p.add_argument("--output-len", type=int, default=8)
    p.add_argument("--vocab-max", type=int, default=500)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--policies", default="round-robin,prefix")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    for name in ("replicas", "threads", "parallel", "tenants", "users", "turns", "concurrency", "block_size"):
        if getattr(args, name) < 1:
            sys.exit(f"--{name.replace('_', '-')} must be at least 1")
    policies = args.policies.split(",")
    for pol in policies:
        if pol not in ("round-robin", "prefix"):
            sys.exit(f"--policies: unknown policy {pol!r} (round-robin, prefix)")
    if not os.path.isfile(args.model):
        sys.exit(f"--model {args.model}: no such file")
    chats = make_trace(args)
    reports = [run_policy(args, pol, chats) for pol in policies]
    if args.json:
        print(json.dumps(reports, indent=2))
        return
    print(f"{args.replicas} replicas x {args.threads} threads, {args.tenants} tenants x {args.users} chats x "
          f"{args.turns} turns, system {args.system_len} + user {args.user_len} + reply {args.output_len} tokens, "
          f"{args.concurrency} clients")
    print(f"{'policy':<12} {'hit rate':>8} {'TTFT mean':>10} {'p50':>7} {'p90':>7} {'req/s':>7} {'out tok/s':>10}  per replica")
    for r in reports:
        print(f"{r['policy']:<12} {r['prefix_hit_rate']:8.1%} {r['ttft_mean_s']:9.2f}s {r['ttft_p50_s']:6.2f}s "
              f"{r['ttft_p90_s']:6.2f}s {r['requests_per_s']:7.2f} {r['output_tokens_per_s']:10.1f}  {r['per_replica']}")


if __name__ == "__main__":
    main()
