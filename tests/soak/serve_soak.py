#!/usr/bin/python3
"""Soak of `offgraph serve` (issue 50, "How it is checked"): mixed clients with
cancellations for minutes against the real stories260K model, checking that

- every complete reply (whole or streamed, completions and chat) equals the reply
  the same request got when it was sent alone, greedy, before the load;
- the server's RSS, open file descriptors and threads stay flat under load, and
  its fds and threads come back to their idle counts once the load stops;
- no request is left running or waiting (/metrics) and no 5xx was logged;
- SIGTERM ends the server with its documented exit code (143) within
  --shutdown-grace-s + 5 s.

Debian's /usr/bin/python3 and its standard library only. Every socket has a
timeout and a watchdog bounds the whole run, so the script always ends by
itself; it exits 0 when every check passed, 1 otherwise (2 on bad arguments).
`--self-test` checks the flatness analysis on synthetic series (no server).
"""

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import soak_checks  # noqa: E402
from soak_requests import (BAD_REQUESTS, generation_requests, stream_body, stream_reply,  # noqa: E402
                           whole_reply)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIGTERM_EXIT = 143       # docs/serving.md: 143 after SIGTERM, in every case
SHUTDOWN_MARGIN_S = 5.0  # docs/serving.md: the process ends within grace + 5 s
REAP_SLACK_S = 2.0       # our own polling and process start-up noise on a busy machine


class SoakFailure(Exception):
    pass


# ---------------------------------------------------------------- the server

class Server:
    """`offgraph serve` on 127.0.0.1 and a port it picks, in its own session,
    stdout and stderr to files (a pipe nobody reads could block it)."""

    def __init__(self, args, workdir):
        self.args = args
        self.out_path = os.path.join(workdir, "serve.out")
        self.err_path = os.path.join(workdir, "serve.err")
        argv = [args.offgraph, "serve", "--model", args.model, "--host", "127.0.0.1", "--port", "0",
                "--parallel", str(args.parallel), "--chat", "llama2", "--log-format", "json",
                "--prefix-cache-entries", str(args.prefix_cache_entries),
                "--shutdown-grace-s", str(args.shutdown_grace_s), "--threads", "2"]
        if args.disk_tier:
            disk = os.path.join(workdir, "prefix-cache")
            os.mkdir(disk)
            argv += ["--prefix-cache-dir", disk, "--prefix-cache-disk-bytes", str(64 << 20)]
        if args.inject == "fd-leak":
            # Idle connections the client keeps are closed by the server after
            # --header-timeout-s; a long one makes kept sockets a real fd leak.
            argv += ["--header-timeout-s", "3600"]
        self.argv = argv
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         start_new_session=True)
        self.pid = self.proc.pid
        self.port = None

    def wait_ready(self, seconds):
        deadline = time.monotonic() + seconds
        marker = "ready on http://127.0.0.1:"
        while time.monotonic() < deadline:
            with open(self.out_path, errors="replace") as f:
                for line in f:
                    if marker in line:
                        self.port = int(line.split(marker)[1].split()[0])
                        return line.strip()
            if self.proc.poll() is not None:
                raise SoakFailure(f"serve exited {self.proc.returncode} before its ready line:\n{self.err_tail()}")
            time.sleep(0.05)
        raise SoakFailure(f"serve printed no ready line within {seconds} s:\n{self.err_tail()}")

    def err_tail(self, lines=15):
        try:
            with open(self.err_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def sample(self):
        """(rss_kb, fds, threads) of the server process now."""
        rss = threads = 0
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        return rss, len(os.listdir(f"/proc/{self.pid}/fd")), threads

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)


# ---------------------------------------------------------------- HTTP

def connect(port, timeout):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)


def exchange(conn, method, path, body=None):
    """(status, body bytes) over conn (kept alive when the server allows)."""
    headers = {}
    if body is not None:
        headers["Content-Type"] = "application/json"
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


def hard_close(conn):
    """Closes conn's socket now (FIN to the server), whatever still refers to it."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    conn.close()


def read_sse(resp, stop_after=None):
    """The stream's events as parsed JSON and whether [DONE] ended it (None:
    stopped after stop_after events on purpose)."""
    events = []
    while True:
        line = resp.readline()
        if not line:
            return events, False
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[len(b"data: "):]
        if data == b"[DONE]":
            return events, True
        events.append(json.loads(data))
        if stop_after is not None and len(events) >= stop_after:
            return events, None


def get_metrics(port, timeout):
    conn = connect(port, timeout)
    try:
        status, body = exchange(conn, "GET", "/metrics")
    finally:
        conn.close()
    if status != 200:
        raise SoakFailure(f"/metrics answered {status}")
    values = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name.split("{")[0]] = float(value)
    return values


# ---------------------------------------------------------------- references

def send_alone(port, timeout, req, streamed):
    """One request on its own connection; its normalised reply."""
    conn = connect(port, timeout)
    try:
        if not streamed:
            status, body = exchange(conn, "POST", req.path, req.body)
            if status != 200:
                raise SoakFailure(f"reference {req.key}: status {status}: {body[:200]!r}")
            return whole_reply(json.loads(body), req.chat)
        conn.request("POST", req.path, body=json.dumps(stream_body(req.body)).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise SoakFailure(f"reference stream {req.key}: status {resp.status}")
        events, done = read_sse(resp)
        if not done:
            raise SoakFailure(f"reference stream {req.key}: ended without [DONE]")
        return stream_reply(events, req.chat)
    finally:
        conn.close()


def compute_references(port, timeout, requests):
    """Each request alone, one at a time: a cold pass, then a second pass (the
    prefix cache warm) and the streamed form, which must all agree."""
    refs = {req.key: send_alone(port, timeout, req, False) for req in requests}
    for req in requests:
        again = send_alone(port, timeout, req, False)
        if again != refs[req.key]:
            raise SoakFailure(f"{req.key}: sent alone twice, two replies (cold {refs[req.key]}, warm {again})")
        streamed = send_alone(port, timeout, req, True)
        if streamed != refs[req.key]:
            raise SoakFailure(f"{req.key}: streamed alone {streamed} != whole alone {refs[req.key]}")
    for bad in BAD_REQUESTS:
        conn = connect(port, timeout)
        try:
            status, body = exchange(conn, bad.method, bad.path, bad.body)
        finally:
            conn.close()
        if status != bad.status:
            raise SoakFailure(f"bad request {bad.key}: status {status}, expected {bad.status}: {body[:200]!r}")
    return refs


# ---------------------------------------------------------------- the load

class Stats:
    """Counters shared by the client threads (one lock: a few µs per request)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds = {}
        self.completed = 0
        self.mismatches = []
        self.errors = []
        self.health_ms = []

    def count(self, kind, n=1):
        with self.lock:
            self.kinds[kind] = self.kinds.get(kind, 0) + n
            self.completed += n

    def mismatch(self, what):
        with self.lock:
            self.mismatches.append(what[:600])

    def error(self, what):
        with self.lock:
            self.errors.append(what)


# Relative weights of what a client does next.
MIX = [("whole", 22), ("stream", 14), ("stream_cancel", 14), ("whole_cancel", 5), ("chat_whole", 10),
       ("chat_stream", 6), ("health", 8), ("metrics", 3), ("models", 3), ("bad", 8), ("partial_body", 3)]


class Client(threading.Thread):
    def __init__(self, index, ctx):
        super().__init__(name=f"client-{index}", daemon=True)
        self.ctx = ctx
        self.rng = random.Random(ctx.args.seed * 1000 + index)
        self.conn = None  # kept alive across requests
        self.kept = []    # --inject fd-leak: connections never closed
        self.kinds = [k for k, _ in MIX]
        self.weights = [w for _, w in MIX]

    def run(self):
        while time.monotonic() < self.ctx.deadline and not self.ctx.stop.is_set():
            kind = self.rng.choices(self.kinds, self.weights)[0]
            try:
                getattr(self, "do_" + kind)()
            except Exception as e:  # any transport or protocol failure is a finding
                self.ctx.stats.error(f"{kind}: {type(e).__name__}: {e}")
                self.drop_conn()
        self.drop_conn()

    # Connections: half the exchanges reuse the kept-alive one, half a fresh one.
    def pick_conn(self):
        if self.rng.random() < 0.5:
            if self.conn is None:
                self.conn = connect(self.ctx.port, self.ctx.args.timeout_s)
            return self.conn, False
        return connect(self.ctx.port, self.ctx.args.timeout_s), True

    def release(self, conn, fresh):
        if fresh:
            if self.ctx.args.inject == "fd-leak" and self.rng.random() < 0.02:
                self.kept.append(conn)
            else:
                conn.close()

    def drop_conn(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def pick_request(self, chat, min_tokens=0):
        pool = [r for r in self.ctx.requests if r.chat == chat and r.max_tokens >= min_tokens]
        return self.rng.choice(pool)

    def compare(self, req, got, how):
        want = self.ctx.refs[req.key]
        if got != want:
            self.ctx.stats.mismatch(f"{req.key} ({how}): got {got}, alone {want}")

    def whole(self, chat):
        req = self.pick_request(chat)
        conn, fresh = self.pick_conn()
        status, body = exchange(conn, "POST", req.path, req.body)
        self.release(conn, fresh)
        if status != 200:
            raise SoakFailure(f"{req.key}: status {status}: {body[:200]!r}")
        self.compare(req, whole_reply(json.loads(body), chat), "whole")
        self.ctx.stats.count("chat_whole" if chat else "whole")

    def stream(self, chat, cancel_after=None):
        req = self.pick_request(chat, min_tokens=16 if cancel_after else 0)
        conn, fresh = (connect(self.ctx.port, self.ctx.args.timeout_s), True) if cancel_after else self.pick_conn()
        conn.request("POST", req.path, body=json.dumps(stream_body(req.body)).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise SoakFailure(f"stream {req.key}: status {resp.status}: {resp.read()[:200]!r}")
        events, done = read_sse(resp, cancel_after)
        if done is None:
            hard_close(conn)  # the client leaves mid-stream
            self.ctx.stats.count("stream_cancelled")
            return
        if not done:
            raise SoakFailure(f"stream {req.key}: the connection ended before [DONE]")
        if resp.read().strip():  # the blank line and the chunked body's end: the connection is reusable
            raise SoakFailure(f"stream {req.key}: bytes after [DONE]")
        self.release(conn, fresh)
        self.compare(req, stream_reply(events, chat), "streamed")
        self.ctx.stats.count("chat_stream" if chat else "stream")

    def do_whole(self):
        self.whole(False)

    def do_chat_whole(self):
        self.whole(True)

    def do_stream(self):
        self.stream(False)

    def do_chat_stream(self):
        self.stream(True)

    def do_stream_cancel(self):
        self.stream(self.rng.random() < 0.25, cancel_after=self.rng.randint(1, 4))

    def do_whole_cancel(self):
        """A whole answer whose client leaves while it is generated (a 499)."""
        req = self.pick_request(False, min_tokens=24)
        conn = connect(self.ctx.port, self.ctx.args.timeout_s)
        conn.request("POST", req.path, body=json.dumps(req.body).encode(),
                     headers={"Content-Type": "application/json"})
        time.sleep(self.rng.uniform(0.0, 0.02))
        hard_close(conn)
        self.ctx.stats.count("whole_cancelled")

    def do_partial_body(self):
        """A body announced longer than what is sent, then the client leaves."""
        with socket.create_connection(("127.0.0.1", self.ctx.port), timeout=self.ctx.args.timeout_s) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"prompt\": \"Once"
                      % self.ctx.port)
        self.ctx.stats.count("partial_body")

    def probe(self, path, kind, check):
        conn, fresh = self.pick_conn()
        t0 = time.monotonic()
        status, body = exchange(conn, "GET", path)
        elapsed_ms = (time.monotonic() - t0) * 1000
        self.release(conn, fresh)
        if status != 200 or not check(body):
            raise SoakFailure(f"{path}: status {status}: {body[:200]!r}")
        if kind == "health":
            with self.ctx.stats.lock:
                self.ctx.stats.health_ms.append(elapsed_ms)
        self.ctx.stats.count(kind)

    def do_health(self):
        self.probe("/health", "health", lambda b: json.loads(b) == {"status": "ok"})

    def do_metrics(self):
        self.probe("/metrics", "metrics", lambda b: b"vllm:num_requests_running" in b)

    def do_models(self):
        self.probe("/v1/models", "models", lambda b: len(json.loads(b)["data"]) == 1)

    def do_bad(self):
        bad = self.rng.choice(BAD_REQUESTS)
        conn, fresh = self.pick_conn()
        status, body = exchange(conn, bad.method, bad.path, bad.body)
        self.release(conn, fresh)
        if status != bad.status or "error" not in json.loads(body):
            raise SoakFailure(f"bad request {bad.key}: status {status}, expected {bad.status}: {body[:200]!r}")
        self.ctx.stats.count("bad")


class Sampler(threading.Thread):
    """The server's RSS, fds and threads once a second, with the requests done so far."""

    def __init__(self, ctx):
        super().__init__(name="sampler", daemon=True)
        self.ctx = ctx
        self.samples = []  # (t, rss_kb, fds, threads, completed)

    def run(self):
        t0 = time.monotonic()
        while not self.ctx.stop.is_set() and time.monotonic() < self.ctx.deadline:
            if self.ctx.server.proc.poll() is not None:
                self.ctx.stats.error(f"serve exited {self.ctx.server.proc.returncode} under load")
                self.ctx.stop.set()
                return
            try:
                rss, fds, threads = self.ctx.server.sample()
                self.samples.append((time.monotonic() - t0, rss, fds, threads, self.ctx.stats.completed))
            except (OSError, ValueError):
                pass  # the process is going away: the next poll() says so
            self.ctx.stop.wait(1.0)


class Context:
    def __init__(self, args, server, requests, refs):
        self.args = args
        self.server = server
        self.port = server.port
        self.requests = requests
        self.refs = refs
        self.stats = Stats()
        self.stop = threading.Event()
        self.deadline = time.monotonic() + args.seconds


def run_load(ctx):
    sampler = Sampler(ctx)
    clients = [Client(i, ctx) for i in range(ctx.args.clients)]
    sampler.start()
    for c in clients:
        c.start()
    t0 = time.monotonic()
    for c in clients:
        # Each request is bounded by the socket timeout, so a client ends within
        # one timeout of the deadline.
        c.join(timeout=max(1.0, ctx.deadline - time.monotonic()) + 2 * ctx.args.timeout_s)
        if c.is_alive():
            ctx.stats.error(f"{c.name} did not end")
    ctx.stop.set()
    sampler.join(timeout=5)
    return sampler.samples, time.monotonic() - t0, clients


# ---------------------------------------------------------------- after the load

def settle_idle(server, before, seconds):
    """Waits for the fd and thread counts to come back to `before` (the idle
    counts before the load); the last sample."""
    deadline = time.monotonic() + seconds
    while True:
        rss, fds, threads = server.sample()
        if (fds <= before[1] and threads <= before[2]) or time.monotonic() > deadline:
            return rss, fds, threads
        time.sleep(0.2)


def idle_counts(server):
    """The fd and thread counts once two samples 0.5 s apart agree (at most 5 s)."""
    last = server.sample()
    for _ in range(10):
        time.sleep(0.5)
        now = server.sample()
        if now[1:] == last[1:]:
            return now
        last = now
    return last


def wait_metrics_idle(port, timeout, seconds):
    deadline = time.monotonic() + seconds
    while True:
        m = get_metrics(port, timeout)
        busy = m.get("vllm:num_requests_running", -1), m.get("vllm:num_requests_waiting", -1)
        if busy == (0, 0) or time.monotonic() > deadline:
            return m, busy
        time.sleep(0.2)


def stop_server(server, grace_s):
    """SIGTERM; (exit code, seconds it took)."""
    t0 = time.monotonic()
    os.kill(server.pid, signal.SIGTERM)
    try:
        code = server.proc.wait(timeout=grace_s + SHUTDOWN_MARGIN_S + REAP_SLACK_S)
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - t0


def access_log_statuses(server):
    """status → count over the JSON access-log lines, and the finish reasons."""
    statuses, finishes = {}, {}
    with open(server.err_path, errors="replace") as f:
        for line in f:
            if not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if "status" in entry:
                statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
            if entry.get("finish_reason"):
                finishes[entry["finish_reason"]] = finishes.get(entry["finish_reason"], 0) + 1
    return statuses, finishes


# ---------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--offgraph", default=os.path.join(REPO_ROOT, "build", "offgraph"),
                   help="the offgraph program (default: build/offgraph)")
    p.add_argument("--model", help="stories260K.gguf (../shared/testdata/models/stories260K/)")
    p.add_argument("--seconds", type=float, default=180, help="length of the load (default 180)")
    p.add_argument("--clients", type=int, default=8, help="client threads (default 8)")
    p.add_argument("--parallel", type=int, default=4, help="serve --parallel (default 4)")
    p.add_argument("--prefix-cache-entries", type=int, default=6,
                   help="serve --prefix-cache-entries (default 6: fewer than the prompts, so entries are evicted)")
    p.add_argument("--no-disk-tier", dest="disk_tier", action="store_false",
                   help="no --prefix-cache-dir (default: a temporary one, 64 MiB)")
    p.add_argument("--shutdown-grace-s", type=float, default=5, help="serve --shutdown-grace-s (default 5)")
    p.add_argument("--timeout-s", type=float, default=60, help="every socket's timeout (default 60)")
    p.add_argument("--rss-bound-mib", type=float, default=soak_checks.RSS_BOUND_MIB,
                   help=f"largest RSS growth, last third vs middle third (default {soak_checks.RSS_BOUND_MIB})")
    p.add_argument("--fd-bound", type=int, default=soak_checks.FD_BOUND,
                   help=f"largest fd growth, last third vs middle third (default {soak_checks.FD_BOUND})")
    p.add_argument("--seed", type=int, default=1, help="seed of the clients' mix (default 1)")
    p.add_argument("--samples-out", metavar="CSV",
                   help="also write the once-a-second samples there (seconds, rss_kb, fds, threads, requests)")
    p.add_argument("--inject", choices=["mismatch", "fd-leak"],
                   help="break the run on purpose, to see the soak fail: a wrong reference, or "
                        "connections the clients never close under a 1 h header timeout")
    p.add_argument("--self-test", action="store_true", help="check the flatness analysis on synthetic series and exit")
    args = p.parse_args(argv)
    if not args.self_test:
        if not args.model:
            p.error("--model is required")
        if args.seconds <= 0 or args.clients < 1 or args.parallel < 1:
            p.error("--seconds, --clients and --parallel must be positive")
    return args


def write_samples(path, samples):
    with open(path, "w") as f:
        f.write("seconds,rss_kb,fds,threads,requests\n")
        for t, rss, fds, threads, done in samples:
            f.write(f"{t:.1f},{rss},{fds},{threads},{done}\n")


def check_inputs(args):
    """A missing model or program is a loud failure, never a skip."""
    if not os.path.isfile(args.model):
        raise SoakFailure(f"the model '{args.model}' does not exist (../shared/testdata holds stories260K)")
    if not (os.path.isfile(args.offgraph) and os.access(args.offgraph, os.X_OK)):
        raise SoakFailure(f"'{args.offgraph}' is not an executable (build the offgraph target)")


def start_watchdog(server, seconds):
    """Ends the whole run (server included) if it ever runs past `seconds`."""
    def fire():
        print(f"FAIL: the soak ran past its bound of {seconds:.0f} s; killing serve", file=sys.stderr, flush=True)
        server.kill()
        os._exit(1)
    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


def soak(args, workdir):
    check_inputs(args)
    requests = generation_requests()
    server = Server(args, workdir)
    try:
        watchdog = start_watchdog(server, args.seconds + 4 * args.timeout_s + 120)
        print(f"[soak] {server.wait_ready(60)}", flush=True)
        refs = compute_references(server.port, args.timeout_s, requests)
        print(f"[soak] {len(refs)} reference replies, each sent alone (cold, warm, streamed: equal)", flush=True)
        if args.inject == "mismatch":  # one reference a character longer than the real reply
            ref = refs[requests[0].key]
            ref["choices"] = [[i, text + "!", finish] for i, text, finish in ref["choices"]]
        before = idle_counts(server)
        ctx = Context(args, server, requests, refs)
        # The clients, and the connections --inject fd-leak keeps open, live
        # until the server has stopped.
        samples, load_s, clients = run_load(ctx)
        kept = sum(len(c.kept) for c in clients)
        if args.samples_out:
            write_samples(args.samples_out, samples)
        metrics, busy = wait_metrics_idle(server.port, args.timeout_s, 10)
        after = settle_idle(server, before, 15)
        statuses, finishes = access_log_statuses(server)
        code, stop_s = stop_server(server, args.shutdown_grace_s)
        watchdog.cancel()
        report = soak_checks.Report(args, ctx.stats, samples, load_s, before, after, busy, metrics,
                                    statuses, finishes, code, stop_s, kept)
        report.expected_exit = SIGTERM_EXIT
        report.stop_bound_s = args.shutdown_grace_s + SHUTDOWN_MARGIN_S
        failures = report.evaluate()
        report.print_summary(failures)
        if failures:
            print(f"[soak] the end of serve's log:\n{server.err_tail(5)}", file=sys.stderr)
        return failures
    finally:
        server.kill()


def main(argv):
    args = parse_args(argv)
    if args.self_test:
        return soak_checks.self_test()
    workdir = tempfile.mkdtemp(prefix="og-soak-")
    try:
        failures = soak(args, workdir)
    except SoakFailure as e:
        failures = [str(e)]
        print(f"FAIL: {e}", file=sys.stderr)
    if failures:
        # The server's access log stays for whoever looks into the failure.
        print(f"FAIL: {len(failures)} check(s) failed; serve's log and cache kept in {workdir}", file=sys.stderr)
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("[soak] ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
