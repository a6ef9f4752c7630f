"""Processes and HTTP for the deployment tests (tests/deploy): free loopback
ports, `offgraph serve` replicas and other children started in their own
process groups and always killed at the end (even when a check fails), a
wall-clock bound for the whole test, and small HTTP helpers on 127.0.0.1."""

import http.client
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time


class TestFailure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise TestFailure(what)


def require_executable(path, what):
    """A tool the set-up script installs: missing is a failure, never a skip."""
    check(os.path.isfile(path) and os.access(path, os.X_OK),
          f"{what} '{path}' is not installed or not executable (scripts/setup.sh installs it)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_run(n, attempts=50):
    """The first of n consecutive loopback ports that are all free now."""
    for _ in range(attempts):
        base = free_port()
        if base + n > 65535:
            continue
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise TestFailure(f"no run of {n} free loopback ports found")


class Children:
    """Children started in new sessions; kill_all() SIGKILLs each group and reaps it."""

    def __init__(self):
        self.procs = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                print(f"warning: pid {p.pid} not reaped", file=sys.stderr)


def read_until(proc, pattern, seconds):
    """Reads proc's stdout (a pipe) until a line contains pattern; that line."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + seconds
    buf = b""
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=0.1):
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                raise TestFailure(f"{proc.args[0]} exited before printing '{pattern}' (exit {proc.wait()})")
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if pattern in line:
                    return line
        raise TestFailure(f"{proc.args[0]} did not print '{pattern}' within {seconds} s")
    finally:
        sel.close()


def start_replica(children, offgraph, model, extra, err_path):
    """`offgraph serve` on 127.0.0.1 and a port of its choosing; (proc, port)."""
    argv = [offgraph, "serve", "--model", model, "--host", "127.0.0.1", "--port", "0"] + extra
    with open(err_path, "wb") as err:
        proc = children.start(argv, stdout=subprocess.PIPE, stderr=err)
    line = read_until(proc, "ready on http://127.0.0.1:", 30)
    port = int(line.split("ready on http://127.0.0.1:")[1].split()[0])
    return proc, port


def request(port, method, path, body=None, timeout=20):
    """(status, headers as a lower-cased dict, body bytes); raises OSError and
    http.client errors on a broken connection or a truncated body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data else {}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        payload = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload
    finally:
        conn.close()


def run_bounded(main, seconds):
    """Runs main() under a wall-clock bound (SIGALRM); prints the outcome and exits 0 or 1."""
    def on_alarm(signum, frame):
        raise TestFailure(f"the test ran past its bound of {seconds} s")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    t0 = time.monotonic()
    try:
        main()
    except TestFailure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    finally:
        signal.alarm(0)
    print(f"ok ({time.monotonic() - t0:.1f} s)")
