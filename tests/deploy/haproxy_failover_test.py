#!/usr/bin/python3
"""Two real `offgraph serve` replicas behind Debian's HAProxy, started by
deploy/haproxy/run-replicas.sh with the committed haproxy.cfg: a bounded load
(40 completions, half of them streamed, from 4 client threads), and replica r1
killed with SIGKILL after 12 have finished. Only requests in flight at the
kill may fail; HAProxy marks r1 down within 3 s; every request started after
the kill succeeds and is served by r2; the script then stops cleanly.
Usage: haproxy_failover_test.py REPO_ROOT OFFGRAPH MODEL [HAPROXY]"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_procs import (Children, TestFailure, check, free_port_run, read_until,  # noqa: E402
                          request, require_executable, run_bounded)

N_REQUESTS = 40
N_THREADS = 4
KILL_AFTER = 12
MAX_TOKENS = 160


def stat_status(sock_path, server):
    """The server's status column in HAProxy's `show stat` (UP, DOWN, ...)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2)
        s.connect(sock_path)
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    lines = data.decode().splitlines()
    cols = lines[0].lstrip("# ").split(",")
    for ln in lines[1:]:
        row = dict(zip(cols, ln.split(",")))
        if row.get("pxname") == "offgraph_replicas" and row.get("svname") == server:
            return row["status"]
    raise TestFailure(f"`show stat` has no row for server {server}")


def one_request(port, i):
    """Sends completion i through HAProxy; (ok, served_by, why)."""
    stream = i % 2 == 1
    body = {"prompt": f"Once upon a time {i}", "max_tokens": MAX_TOKENS, "ignore_eos": True,
            "temperature": 0, "stream": stream}
    try:
        status, headers, payload = request(port, "POST", "/v1/completions", body, timeout=20)
    except Exception as e:  # a connection reset or a truncated chunked body
        return False, None, f"{type(e).__name__}: {e}"
    served_by = headers.get("x-served-by")
    if status != 200:
        return False, served_by, f"status {status}: {payload[:200]!r}"
    text = payload.decode(errors="replace")
    if stream:
        events = [ln[6:] for ln in text.splitlines() if ln.startswith("data: ")]
        if not events or events[-1] != "[DONE]":
            return False, served_by, "the stream did not end with data: [DONE]"
        return True, served_by, ""
    try:
        usage = json.loads(text)["usage"]
    except (ValueError, KeyError) as e:
        return False, served_by, f"not a completion: {e}"
    if usage["completion_tokens"] != MAX_TOKENS:
        return False, served_by, f"{usage['completion_tokens']} tokens"
    return True, served_by, ""


def wait_refused(port):
    """Returns once 127.0.0.1:port refuses connections: SIGKILL is delivered at once, but
    the listening socket closes only when the last of the process's threads has exited."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return
        except (ConnectionResetError, TimeoutError):
            pass  # the socket is being torn down
        time.sleep(0.001)
    raise TestFailure(f"port {port} still accepts connections 5 s after SIGKILL")


def run_load(port, r1_pid, r1_port):
    """The load; returns (records, kill_sent, r1_dead): the times r1 got SIGKILL and was
    seen dead. A record: (i, start, end, ok, served_by, why)."""
    lock = threading.Lock()
    next_i = [0]
    records = []
    kill = {}
    errors = []

    def worker():
        try:
            while True:
                with lock:
                    i = next_i[0]
                    if i >= N_REQUESTS:
                        return
                    next_i[0] += 1
                start = time.monotonic()
                ok, served_by, why = one_request(port, i)
                end = time.monotonic()
                with lock:
                    records.append((i, start, end, ok, served_by, why))
                    do_kill = len(records) == KILL_AFTER
                if do_kill:
                    kill["sent"] = time.monotonic()
                    os.kill(r1_pid, signal.SIGKILL)
                    wait_refused(r1_port)
                    kill["dead"] = time.monotonic()
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        check(not t.is_alive(), "a client thread did not finish within 60 s")
    check(not errors, f"client threads failed: {errors}")
    check("dead" in kill, "r1 was killed during the load")
    return records, kill["sent"], kill["dead"]


def main():
    repo, offgraph, model = sys.argv[1:4]
    haproxy = sys.argv[4] if len(sys.argv) > 4 else "/usr/sbin/haproxy"
    require_executable(haproxy, "haproxy")
    children = Children()
    with tempfile.TemporaryDirectory(prefix="og-haproxy-") as tmp:
        run_dir = os.path.join(tmp, "run")
        try:
            port = free_port_run(3)
            script = children.start(
                [os.path.join(repo, "deploy/haproxy/run-replicas.sh"), "--model", model,
                 "--replicas", "2", "--port", str(port), "--offgraph", offgraph, "--haproxy", haproxy,
                 "--run-dir", run_dir, "--ready-timeout-s", "30",
                 "--", "--parallel", "4", "--threads", "1", "--shutdown-grace-s", "2"],
                stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "script.err"), "wb"))
            read_until(script, "[run-replicas] ready on", 40)
            r1_pid = int(open(os.path.join(run_dir, "replica-1.pid")).read())
            r2_pid = int(open(os.path.join(run_dir, "replica-2.pid")).read())
            sock = os.path.join(run_dir, "haproxy.sock")
            # Servers start "UP 1/2" (not yet checked); one passed check makes them "UP".
            deadline = time.monotonic() + 3
            while (statuses := (stat_status(sock, "r1"), stat_status(sock, "r2"))) != ("UP", "UP"):
                check(time.monotonic() < deadline, f"both replicas UP in HAProxy within 3 s, not {statuses}")
                time.sleep(0.05)

            records, kill_sent, r1_dead = run_load(port, r1_pid, port + 1)
            # HAProxy takes r1 out (checks every 0.5 s, 2 failures; or at once on a refused connection).
            deadline = kill_sent + 3
            while stat_status(sock, "r1") != "DOWN":
                check(time.monotonic() < deadline, "HAProxy did not mark r1 DOWN within 3 s of its kill")
                time.sleep(0.05)
            check(stat_status(sock, "r2") == "UP", "r2 stays UP")

            check(len(records) == N_REQUESTS, f"{len(records)} of {N_REQUESTS} requests finished")
            # In flight: started before r1 was dead and ended after it got the signal.
            before = [r for r in records if r[2] <= kill_sent]
            in_flight = [r for r in records if r[1] <= r1_dead and r[2] > kill_sent]
            after = [r for r in records if r[1] > r1_dead]
            failed = [r for r in records if not r[3]]
            print(f"{len(before)} finished before the kill, {len(in_flight)} in flight, {len(after)} started after; "
                  f"{len(failed)} failed: {[(r[0], r[5]) for r in failed]}")
            check(any(r[4] == "r1" for r in before), "r1 served requests before its kill (leastconn spreads the load)")
            for r in failed:
                check(r in in_flight, f"request {r[0]} failed ({r[5]}) but was not in flight at the kill")
            check(len(failed) <= N_THREADS, "at most the in-flight requests failed")
            check(len(after) >= N_REQUESTS // 4,
                  f"{len(after)} requests started after the kill")
            for r in after:
                check(r[3], f"request {r[0]}, started after the kill, failed: {r[5]}")
                check(r[4] == "r2", f"request {r[0]}, started after the kill, was served by {r[4]}")

            # SIGTERM to the script: HAProxy stops, r2 drains and exits, the script exits 143.
            script.send_signal(signal.SIGTERM)
            try:
                rc = script.wait(timeout=15)
            except subprocess.TimeoutExpired:
                raise TestFailure("run-replicas.sh did not exit within 15 s of SIGTERM")
            check(rc == 143, f"run-replicas.sh exited {rc} after SIGTERM, expected 143")
            for pid, name in ((r2_pid, "replica r2"),
                              (int(open(os.path.join(run_dir, "haproxy.pid")).read()), "haproxy")):
                try:
                    os.kill(pid, 0)
                    raise TestFailure(f"{name} (pid {pid}) still runs after the script exited")
                except ProcessLookupError:
                    pass
        except TestFailure:
            for name in ("script.err", "run/haproxy.log", "run/replica-1.err", "run/replica-2.err"):
                path = os.path.join(tmp, name)
                if os.path.exists(path):
                    print(f"--- {name} (tail)", file=sys.stderr)
                    print(open(path, errors="replace").read()[-2000:], file=sys.stderr)
            raise
        finally:
            children.kill_all()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("Usage: ")[1].split("\n")[0].join(("usage: ", "")))
    run_bounded(main, 60)
