#!/usr/bin/python3
"""Debian's Prometheus scraping two real `offgraph serve` replicas (1 s
interval, a temporary config and TSDB, loopback only): its HTTP API reports
both targets up within 20 s, and vllm:num_requests_running,
vllm:num_requests_waiting and vllm:kv_cache_usage_perc for each instance,
with values in range.
Usage: prometheus_scrape_test.py OFFGRAPH MODEL [PROMETHEUS]"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_procs import (Children, TestFailure, check, free_port, request,  # noqa: E402
                          require_executable, run_bounded, start_replica)

WAIT_S = 20


def query(port, expr):
    """The result vector of an instant query, as {instance: value}."""
    status, _, body = request(port, "GET", "/api/v1/query?query=" + urllib.parse.quote(expr), timeout=5)
    check(status == 200, f"Prometheus query {expr}: status {status}: {body[:200]!r}")
    data = json.loads(body)
    check(data.get("status") == "success", f"Prometheus query {expr}: {data}")
    return {r["metric"].get("instance"): float(r["value"][1]) for r in data["data"]["result"]}


def main():
    offgraph, model = sys.argv[1:3]
    prometheus = sys.argv[3] if len(sys.argv) > 3 else "/usr/bin/prometheus"
    require_executable(prometheus, "prometheus")
    children = Children()
    with tempfile.TemporaryDirectory(prefix="og-prometheus-") as tmp:
        try:
            targets = []
            for i in (1, 2):
                _, port = start_replica(children, offgraph, model, ["--parallel", "2", "--threads", "1"],
                                        os.path.join(tmp, f"replica-{i}.err"))
                # One request each, so that the series carry served traffic.
                status, _, _ = request(port, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 4})
                check(status == 200, f"replica {i} answers a completion")
                targets.append(f"127.0.0.1:{port}")
            cfg = os.path.join(tmp, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        "scrape_configs:\n  - job_name: offgraph\n    static_configs:\n"
                        f"      - targets: {json.dumps(targets)}\n")
            prom_port = free_port()
            with open(os.path.join(tmp, "prometheus.log"), "wb") as log:
                children.start([prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                                f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + WAIT_S
            running = {}
            while True:
                try:
                    running = query(prom_port, 'vllm:num_requests_running{job="offgraph"}')
                except (OSError, TestFailure):
                    running = {}  # not listening yet, or no data yet
                if sorted(running) == sorted(targets):
                    break
                check(time.monotonic() < deadline,
                      f"Prometheus did not report vllm:num_requests_running for both replicas within {WAIT_S} s "
                      f"(has {sorted(running)}, targets {targets})")
                time.sleep(0.25)
            up = query(prom_port, 'up{job="offgraph"}')
            check(up == {t: 1.0 for t in targets}, f"both targets are up: {up}")
            usage = query(prom_port, "vllm:kv_cache_usage_perc")
            waiting = query(prom_port, "vllm:num_requests_waiting")
            for t in targets:
                check(t in usage and 0.0 <= usage[t] <= 1.0, f"vllm:kv_cache_usage_perc of {t} in [0, 1]: {usage}")
                check(t in waiting and waiting[t] >= 0, f"vllm:num_requests_waiting of {t}: {waiting}")
                check(running[t] >= 0, f"vllm:num_requests_running of {t}: {running}")
            print(f"scraped {targets}: running {running}, waiting {waiting}, kv usage {usage}")
        except TestFailure:
            path = os.path.join(tmp, "prometheus.log")
            if os.path.exists(path):
                print("--- prometheus.log (tail)\n" + open(path, errors="replace").read()[-2000:], file=sys.stderr)
            raise
        finally:
            children.kill_all()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("Usage: ")[1].split("\n")[0].join(("usage: ", "")))
    run_bounded(main, 60)
