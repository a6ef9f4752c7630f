#!/usr/bin/python3
"""KV events end to end: a real `offgraph serve` publishing to a ZeroMQ SUB
socket that binds (llm-d's centralized mode), read with Debian's python3-zmq
and python3-msgpack, block hashes recomputed with python3-cbor2 and hashlib
from the documented algorithm (docs/kv-events.md), not from our code.

Checks: the topic and [topic, seq, batch] framing, sequence numbers from 0
without gaps, vLLM 0.11's tagged-array layout, BlockStored hashes and tokens
equal to the independent chain (int form = low 64 bits; the bytes form whole),
a stored block removed only after it was stored and only once, cache_salt
changing the first block's hash, a replay from sequence k returning k.. then
the end marker, AllBlocksCleared on shutdown, the /metrics counter, and bad or
busy endpoints refused at start naming their flag (an ipc:// path another live
server holds among them; a 10,000-character endpoint cut in the message).
--kv-events-encoding map: events are maps decoded by name with llm-d's rules
(tests/deploy/llmd_events.py) into the same hashes and tokens as the python
chain. --kv-events-bind binds one interface (tcp://127.0.0.1:P), and an IPv6
endpoint (tcp://[::1]:P) publishes.

usage: kv_events_test.py OFFGRAPH MODEL
"""
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import cbor2
import msgpack
import zmq

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy"))
import llmd_events  # noqa: E402

BLOCK = 16  # serve's default --block-size
SEED = "1234"
END_SEQ = (-1).to_bytes(8, "big", signed=True)
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)


# --- the documented algorithm, written from docs/kv-events.md ---------------

def none_hash(seed):
    return hashlib.sha256(cbor2.dumps(seed, canonical=True)).digest()


def chain(tokens, seed, salt=None):
    """[(hash bytes, block tokens, parent bytes or None)] for each full block."""
    out, parent = [], none_hash(seed)
    for i in range(len(tokens) // BLOCK):
        block = tuple(tokens[i * BLOCK:(i + 1) * BLOCK])
        extra = (salt,) if (salt and i == 0) else None
        h = hashlib.sha256(cbor2.dumps((parent, block, extra), canonical=True)).digest()
        out.append((h, block, parent if i > 0 else None))
        parent = h
    return out


def low64(h):
    return int.from_bytes(h, "big") & ((1 << 64) - 1)


# --- the server ---------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(offgraph, model, *extra):
    cmd = [offgraph, "serve", "--model", model, "--port", "0", "--parallel", "1",
           "--prefix-hash-seed", SEED, *extra]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        m = re.search(r"ready on http://127\.0\.0\.1:(\d+)", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    raise SystemExit("serve did not become ready: " + p.stderr.read())


def settle(sub):
    """Lets the SUB socket attach the replica's connection and send its
    subscription (ZeroMQ does so only while the socket is used, as a real
    subscriber's poll loop does); earlier messages are lost, as on any PUB."""
    for _ in range(10):
        sub.poll(20)


def complete(port, prompt, salt=None):
    body = {"model": "stories260K", "prompt": prompt, "max_tokens": 1, "temperature": 0}
    if salt:
        body["cache_salt"] = salt
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            out = json.load(r)
    except urllib.error.HTTPError as e:
        raise SystemExit(f"/v1/completions: {e.code} {e.read().decode()}")
    check(out["usage"]["prompt_tokens"] == len(prompt), "the token-id prompt is taken as is")


def receive(sub, until, timeout_s=5.0):
    """Messages [topic, seq, payload] until until(messages) or the timeout."""
    msgs, deadline = [], time.time() + timeout_s
    while not until(msgs) and time.time() < deadline:
        if sub.poll(50):
            msgs.append(sub.recv_multipart())
    return msgs


def replay(ctx, port, k):
    """[(seq, payload)] a DEALER gets from the replay socket for start k,
    checking the end marker [-1, b""]."""
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(f"tcp://127.0.0.1:{port}")
    dealer.send_multipart([b"", k.to_bytes(8, "big")])
    out = []
    while dealer.poll(3000):
        _, seq, payload = dealer.recv_multipart()
        if seq == END_SEQ:
            check(payload == b"", "the end marker's payload is empty")
            break
        out.append((int.from_bytes(seq, "big"), payload))
    else:
        check(False, "the replay ends with the -1 marker")
    dealer.close()
    return out


def decode(payload):
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    check(isinstance(batch, list) and len(batch) == 3, "a batch is [ts, events, data_parallel_rank]")
    ts, events, rank = batch
    check(isinstance(ts, float) and abs(ts - time.time()) < 60, "ts is the wall clock in seconds")
    check(rank == 0, "data_parallel_rank is 0")
    for e in events:
        tag = e[0]
        want = {"BlockStored": 7, "BlockRemoved": 3, "AllBlocksCleared": 1}.get(tag)
        check(want == len(e), f"{tag} has vLLM 0.11's {want} elements: {e!r}")
        if tag == "BlockStored":
            check(e[4] == BLOCK and e[5] is None and e[6] == "CPU", "block_size, lora_id nil, medium CPU")
            check(len(e[3]) == BLOCK * len(e[1]), "BlockStored carries block_size tokens per hash")
        if tag == "BlockRemoved":
            check(e[2] == "CPU", "BlockRemoved medium CPU")
    return events


# --- the runs ---------------------------------------------------------------

def main_run(offgraph, model, ctx):
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
    sub_port = sub.bind_to_random_port("tcp://127.0.0.1")
    replay_port = free_port()
    server, port = start(offgraph, model, "--prefix-cache-entries", "2",
                         "--kv-events-endpoint", f"tcp://127.0.0.1:{sub_port}",
                         "--kv-events-topic", "kv@pod-a@stories",
                         "--kv-events-replay-endpoint", f"tcp://127.0.0.1:{replay_port}")
    settle(sub)
    try:
        shared = [(7 * i + 3) % 500 + 1 for i in range(2 * BLOCK)]
        a = shared + [(11 * i + 5) % 500 + 1 for i in range(BLOCK + 4)]
        b = shared + [(13 * i + 2) % 500 + 1 for i in range(BLOCK + 4)]
        c = [(17 * i + 9) % 500 + 1 for i in range(2 * BLOCK + 1)]
        d = [(19 * i + 4) % 500 + 1 for i in range(BLOCK + 1)]
        requests = [(a, None), (b, None), (a, "tenant-1"), (c, None), (d, None)]
        expected = {}  # low64 -> (hash, tokens, parent)
        for prompt, salt in requests:
            for h, block, parent in chain(prompt, SEED, salt):
                expected[low64(h)] = (h, block, parent)
            complete(port, prompt, salt)
        check(chain(a, SEED)[0][0] != chain(a, SEED, "tenant-1")[0][0], "a salt changes the first block's hash")
        check(chain(a, SEED)[1][0] != chain(a, SEED, "tenant-1")[1][0], "... and so every later one")

        # 5 captures into 2 entries: 3 evictions, each removing some block.
        def enough(payloads):
            evs = [e for p in payloads for e in msgpack.unpackb(p, raw=False)[1]]
            return sum(e[0] == "BlockStored" for e in evs) >= 5 and sum(e[0] == "BlockRemoved" for e in evs) >= 3
        msgs = receive(sub, lambda ms: enough([m[2] for m in ms]), timeout_s=3.0)
        check(all(len(m) == 3 for m in msgs), "messages are [topic, seq, payload]")
        check(all(m[0] == b"kv@pod-a@stories" for m in msgs), "the topic frame is --kv-events-topic")
        check(all(len(m[1]) == 8 for m in msgs), "the sequence frame is 8 bytes")
        live_seqs = [int.from_bytes(m[1], "big") for m in msgs]
        check(live_seqs == list(range(live_seqs[0], live_seqs[0] + len(live_seqs))) if live_seqs else True,
              f"live sequence numbers without gaps: {live_seqs}")
        # A subscriber that joined late (its subscription reached the replica
        # after the first batches) fills the start from the replay socket, as
        # vLLM's example subscriber does; the whole is 0.. without gaps.
        everything = replay(ctx, replay_port, 0)
        early = [(q, p) for q, p in everything if not live_seqs or q < live_seqs[0]]
        if early:
            print(f"note: the first {len(early)} batches came by replay")
        batches = early + [(q, m[2]) for q, m in zip(live_seqs, msgs)]
        seqs = [q for q, _ in batches]
        check(seqs == list(range(len(seqs))), f"sequence numbers 0.. without gaps: {seqs}")
        check(enough([p for _, p in batches]), f"5 stores and 3 removals arrive ({len(batches)} batches)")
        check(everything == batches, "a replay from 0 returns every batch, as published, in order")

        live, seen_stored = {}, set()
        for _, payload in batches:
            for e in decode(payload):
                if e[0] == "BlockStored":
                    hashes, parent, tokens = e[1], e[2], e[3]
                    for i, h in enumerate(hashes):
                        check(h in expected, f"stored hash {h:#x} is a block of a prompt sent (python chain)")
                        if h not in expected:
                            continue
                        _, block, par = expected[h]
                        check(tuple(tokens[i * BLOCK:(i + 1) * BLOCK]) == block, "stored tokens are the block's")
                        want_parent = (low64(par) if par else None) if i == 0 else hashes[i - 1]
                        got_parent = parent if i == 0 else hashes[i - 1]
                        check(got_parent == want_parent, f"parent of {h:#x}")
                        check(h not in live, f"{h:#x} stored while already live")
                        live[h] = True
                        seen_stored.add(h)
                elif e[0] == "BlockRemoved":
                    for h in e[1]:
                        check(h in live, f"removed {h:#x} was stored before and is live")
                        live.pop(h, None)
        n_events = sum(len(msgpack.unpackb(p, raw=False)[1]) for _, p in batches)
        print(f"{len(batches)} batches, {n_events} events: {len(seen_stored)} blocks stored, "
              f"{len(seen_stored) - len(live)} removed")
        for prompt, salt in requests:
            first = low64(chain(prompt, SEED, salt)[0][0])
            check(first in seen_stored, f"the first block of every prompt is stored (salt {salt})")

        # /metrics counts what was published.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        got = re.search(r'^offgraph:kv_events_published_total\{[^}]*\} (\S+)$', text, re.M)
        check(got is not None and float(got.group(1)) == n_events, "offgraph:kv_events_published_total")

        # Replay from k: batches k.. as sent, then the end marker.
        k = 2
        check(replay(ctx, replay_port, k) == batches[k:], f"a replay from {k} returns batches {k}.. as published")

        # Shutdown: the cache goes with the process, and says so.
        server.send_signal(signal.SIGTERM)
        tail = receive(sub, lambda ms: any(e[0] == "AllBlocksCleared" for m in ms
                                           for e in msgpack.unpackb(m[2], raw=False)[1]))
        check(tail and msgpack.unpackb(tail[-1][2], raw=False)[1][-1] == ["AllBlocksCleared"],
              "AllBlocksCleared is the last event at shutdown")
        check(tail and int.from_bytes(tail[0][1], "big") == seqs[-1] + 1, "the shutdown batch follows without a gap")
        check(server.wait(timeout=15) == 128 + signal.SIGTERM, "serve exits as after SIGTERM")
    finally:
        if server.poll() is None:
            server.kill()
        sub.close()


def bytes_run(offgraph, model, ctx):
    """--kv-events-hash-format bytes: the 32-byte hashes equal python's sha256 whole."""
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub_port = sub.bind_to_random_port("tcp://127.0.0.1")
    replay_port = free_port()
    server, port = start(offgraph, model, "--kv-events-endpoint", f"tcp://127.0.0.1:{sub_port}",
                         "--kv-events-hash-format", "bytes",
                         "--kv-events-replay-endpoint", f"tcp://127.0.0.1:{replay_port}")
    settle(sub)
    try:
        prompt = [(23 * i + 1) % 500 + 1 for i in range(3 * BLOCK + 2)]
        complete(port, prompt, "tenant-2")
        msgs = receive(sub, lambda ms: len(ms) >= 1, timeout_s=2.0)
        check(all(m[0] == b"" for m in msgs), "the default topic is empty")
        payloads = [m[2] for m in msgs] or [p for _, p in replay(ctx, replay_port, 0)]
        check(len(payloads) == 1, f"one batch ({len(payloads)})")
        if payloads:
            events = decode(payloads[0])
            want = chain(prompt, SEED, "tenant-2")
            check(events == [["BlockStored", [h for h, _, _ in want], None, list(prompt[:3 * BLOCK]), BLOCK, None,
                              "CPU"]], f"the bytes-form BlockStored equals the python chain: {events!r}")
    finally:
        server.kill()
        server.wait()
        sub.close()


def refusals(offgraph, model):
    def refused(extra, flag, what):
        p = subprocess.run([offgraph, "serve", "--model", model, "--port", "0", *extra], capture_output=True,
                           text=True, timeout=20)
        lines = p.stderr.strip().splitlines()
        check(p.returncode != 0 and len(lines) == 1 and flag in lines[0],
              f"{what}: one line naming {flag}, exit non-zero (rc {p.returncode}: {p.stderr.strip()!r})")
    refused(["--kv-events-endpoint", "foo"], "--kv-events-endpoint", "a malformed endpoint")
    huge = "tcp://" + "h" * 10000 + ":1"
    p = subprocess.run([offgraph, "serve", "--model", model, "--port", "0", "--kv-events-endpoint", huge],
                       capture_output=True, text=True, timeout=20)
    check(p.returncode != 0 and len(p.stderr) < 400 and "10008 characters" in p.stderr,
          f"a 10,000-character endpoint is cut in the error (rc {p.returncode}, {len(p.stderr)} bytes)")
    # An ipc:// path a live server holds is refused, and that server keeps it.
    path = f"/tmp/og-kv-e2e-{os.getpid()}"
    first, _ = start(offgraph, model, "--kv-events-endpoint", f"ipc://{path}")
    try:
        refused(["--kv-events-endpoint", f"ipc://{path}"], "--kv-events-endpoint", "an ipc path a live server holds")
        check(first.poll() is None and os.path.exists(path), "the first server still holds its ipc path")
    finally:
        first.kill()
        first.wait()
    refused(["--kv-events-encoding", "map"], "--kv-events-encoding", "an encoding without an endpoint")
    refused(["--kv-events-topic", "kv@a@b"], "--kv-events-topic", "a topic without an endpoint")
    # Loopback only: a wildcard bind of the same port still finds it taken.
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        refused(["--kv-events-endpoint", f"tcp://*:{port}"], "--kv-events-endpoint", "a busy PUB port")
        refused(["--kv-events-endpoint", "tcp://127.0.0.1:1", "--kv-events-replay-endpoint", f"tcp://127.0.0.1:{port}"],
                "--kv-events-replay-endpoint", "a busy replay port")
    finally:
        busy.close()


def one_prompt_run(offgraph, model, ctx, sub, extra, prompt, maps):
    """Starts serve with `extra`, sends `prompt`, returns its events decoded
    by llm-d's rules (maps: the map encoding's) and the raw events."""
    server, port = start(offgraph, model, *extra)
    settle(sub)
    settle(sub)  # a SUB that connects retries every 100 ms until the replica binds
    try:
        complete(port, prompt)
        msgs = receive(sub, lambda ms: len(ms) >= 1, timeout_s=3.0)
        check(len(msgs) >= 1, f"events arrive with {' '.join(extra)}")
        decoded, raw = [], []
        for m in msgs:
            try:
                decoded += llmd_events.decode_batch(m[2], maps=maps)[1]
            except llmd_events.DecodeError as e:
                check(False, f"llm-d's rules decode the events ({' '.join(extra)}): {e}")
            raw += msgpack.unpackb(m[2], raw=False)[1]
        return decoded, raw
    finally:
        server.kill()
        server.wait()


def map_run(offgraph, model, ctx):
    """--kv-events-encoding map: tagged maps, read by field name, equal to the python chain."""
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub_port = sub.bind_to_random_port("tcp://127.0.0.1")
    prompt = [(29 * i + 7) % 500 + 1 for i in range(2 * BLOCK + 5)]
    try:
        events, raw = one_prompt_run(offgraph, model, ctx, sub,
                                     ["--kv-events-endpoint", f"tcp://127.0.0.1:{sub_port}",
                                      "--kv-events-encoding", "map"], prompt, maps=True)
        check(raw and all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in raw),
              f"map events are maps with a 'type': {raw!r}"[:300])
        stored = [e for e in raw if e.get("type") == "BlockStored"]
        check(stored and set(stored[0]) == {"type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
                                            "lora_id", "medium", "lora_name"},
              f"BlockStored's keys are current vLLM's: {sorted(stored[0]) if stored else None}")
        want = chain(prompt, SEED)
        got = [e for e in events if e["type"] == "BlockStored"]
        check(got and got[0]["hashes"] == [low64(h) for h, _, _ in want] and got[0]["parent"] == 0
              and got[0]["tokens"] == prompt[:2 * BLOCK] and got[0]["block_size"] == BLOCK,
              f"the map-encoded BlockStored equals the python chain: {got!r}"[:300])
    finally:
        sub.close()


def has_ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


def interface_runs(offgraph, model, ctx):
    """--kv-events-bind on one interface, and an IPv6 endpoint: a SUB that connects gets events."""
    cases = [(["--kv-events-bind", "--kv-events-endpoint", f"tcp://127.0.0.1:{free_port()}"], False)]
    if has_ipv6_loopback():
        cases.append((["--kv-events-endpoint", "tcp://[::1]:{}"], True))
    else:
        print("note: no IPv6 loopback here: the tcp://[::1] case is left out")
    prompt = [(31 * i + 2) % 500 + 1 for i in range(BLOCK + 1)]
    for extra, v6 in cases:
        if v6:
            s = socket.socket(socket.AF_INET6)
            s.bind(("::1", 0))
            port = s.getsockname()[1]
            s.close()
            extra = [x.format(port) for x in extra]
        endpoint = extra[-1]
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        if v6:
            sub.setsockopt(zmq.IPV6, 1)
        sub.connect(endpoint)
        try:
            events, _ = one_prompt_run(offgraph, model, ctx, sub, extra, prompt, maps=False)
            check(any(e["type"] == "BlockStored" for e in events), f"a connecting SUB gets BlockStored from {endpoint}")
        finally:
            sub.close()


def main():
    offgraph, model = sys.argv[1], sys.argv[2]
    t0 = time.time()
    ctx = zmq.Context()
    refusals(offgraph, model)
    main_run(offgraph, model, ctx)
    bytes_run(offgraph, model, ctx)
    map_run(offgraph, model, ctx)
    interface_runs(offgraph, model, ctx)
    ctx.term()
    print(f"kv events e2e: {len(FAILS)} failures, {time.time() - t0:.1f} s")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
