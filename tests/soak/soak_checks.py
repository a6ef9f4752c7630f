"""The soak's verdict (tests/soak/serve_soak.py): which checks failed, the
flatness of the server's RSS, fds and threads over the load, and the summary.

Flatness compares the median of the last third of the once-a-second samples
with the median of the middle third; the first third is warm-up (malloc's
arenas, the prefix cache and its disk tier filling, threads' stacks touched).
Medians, not extremes: the fd count moves with the connections open at the
instant of a sample, RSS with the requests being decoded.
"""

import random
import statistics

# RSS: a leak of L bytes per request grows the server by L times the requests
# between the two windows' middles, a third of the run's: ~32,000 in the
# 3-minute run of 8 clients on a busy 2-core machine (~500 requests/s), where a
# flat run moved +0.3 MiB between the windows (stories260K's server is ~17 MiB
# idle, ~23 MiB under load). 4 MiB is over 10x that noise and catches a leak of
# ~130 bytes per request there (1 KiB per request: 30 MiB), and ~1.3 KiB per
# request at a tenth of that speed.
RSS_BOUND_MIB = 4.0
# fds: one per open connection (8 clients hold at most 2 each) plus the fixed
# ones; the windows' medians agree within a few. A leak of one fd per 1,000
# requests is 20+ between the windows of a 3-minute run at 300 requests/s.
# (The idle check below is the finer one: any fd still open once the load has
# stopped counts, so a leak of three fds in the whole run fails it.)
FD_BOUND = 8
# Threads come from fixed pools: any growth between the windows is a leak.
THREAD_BOUND = 1
# Once the load stops and the clients have closed their sockets, the server's
# fds must come back to their idle count before the load (a closing socket
# takes the event loop a moment): 2 of slack for a disk-tier file being
# written at that instant.
IDLE_FD_SLACK = 2
# A flatness verdict needs 20 samples per third (one a second): a run of a minute.
MIN_FLAT_SAMPLES = 60
# /health is answered by the event loop itself; a reply slower than this under
# load is a stall, not the noise of a busy machine.
HEALTH_MAX_MS = 5000.0


def thirds(samples):
    n = len(samples) // 3
    return samples[:n], samples[n:2 * n], samples[2 * n:]


def window_medians(samples, column):
    """(first, middle, last) medians of one column of the samples."""
    return tuple(statistics.median(s[column] for s in part) if part else 0 for part in thirds(samples))


def requests_between_windows(samples):
    """Requests completed between the middle of the middle third and the middle of the last."""
    _, middle, last = thirds(samples)
    if not middle or not last:
        return 0
    return last[len(last) // 2][4] - middle[len(middle) // 2][4]


def flatness_failures(samples, rss_bound_mib, fd_bound, thread_bound=THREAD_BOUND):
    """Samples are (t, rss_kb, fds, threads, completed); the failed checks."""
    if len(samples) < MIN_FLAT_SAMPLES:
        return []
    failures = []
    _, rss_mid, rss_last = window_medians(samples, 1)
    growth_mib = (rss_last - rss_mid) / 1024
    if growth_mib > rss_bound_mib:
        per_req = growth_mib * (1 << 20) / max(1, requests_between_windows(samples))
        failures.append(f"RSS grew {growth_mib:.1f} MiB from the middle third to the last (bound "
                        f"{rss_bound_mib} MiB; ~{per_req:.0f} B per request)")
    _, fd_mid, fd_last = window_medians(samples, 2)
    if fd_last - fd_mid > fd_bound:
        failures.append(f"open fds grew from {fd_mid:.0f} to {fd_last:.0f} (median of the middle third "
                        f"to the last; bound +{fd_bound})")
    _, th_mid, th_last = window_medians(samples, 3)
    if th_last - th_mid > thread_bound:
        failures.append(f"threads grew from {th_mid:.0f} to {th_last:.0f} (bound +{thread_bound})")
    return failures


class Report:
    """What the soak measured, its verdict and its summary."""

    def __init__(self, args, stats, samples, load_s, before, after, busy, metrics, statuses, finishes,
                 exit_code, stop_s, kept):
        self.args = args
        self.stats = stats
        self.samples = samples
        self.load_s = load_s
        self.before = before  # (rss_kb, fds, threads) idle before the load
        self.after = after    # the same once the load stopped
        self.busy = busy      # (running, waiting) from /metrics after the load
        self.metrics = metrics
        self.statuses = statuses
        self.finishes = finishes
        self.exit_code = exit_code
        self.stop_s = stop_s
        self.kept = kept
        self.expected_exit = 143
        self.stop_bound_s = 0.0

    def evaluate(self):
        f = []
        k = self.stats.kinds
        f += [f"request failed: {e}" for e in self.stats.errors[:10]]
        if len(self.stats.errors) > 10:
            f.append(f"... {len(self.stats.errors) - 10} more failed requests")
        f += [f"reply differs from the same request alone: {m}" for m in self.stats.mismatches[:10]]
        if len(self.stats.mismatches) > 10:
            f.append(f"... {len(self.stats.mismatches) - 10} more replies differ")
        for kind in ("whole", "stream", "stream_cancelled", "chat_whole"):
            if not k.get(kind):
                f.append(f"no '{kind}' request completed: the load did not exercise it")
        if self.busy != (0, 0):
            f.append(f"after the load /metrics still counts {self.busy[0]} running and {self.busy[1]} waiting")
        if not self.metrics.get("offgraph:prefix_cache_hits_total"):
            f.append("the prefix cache was never hit")
        errors_5xx = {s: n for s, n in self.statuses.items() if s >= 500}
        if errors_5xx:
            f.append(f"the access log has 5xx answers: {errors_5xx}")
        if self.after[1] > self.before[1] + IDLE_FD_SLACK:
            f.append(f"idle fds {self.before[1]} before the load, {self.after[1]} after it (slack {IDLE_FD_SLACK})")
        if self.after[2] > self.before[2]:
            f.append(f"idle threads {self.before[2]} before the load, {self.after[2]} after it")
        f += flatness_failures(self.samples, self.args.rss_bound_mib, self.args.fd_bound)
        if self.stats.health_ms and max(self.stats.health_ms) > HEALTH_MAX_MS:
            f.append(f"/health took {max(self.stats.health_ms):.0f} ms under load (bound {HEALTH_MAX_MS:.0f})")
        if self.exit_code is None:
            f.append(f"serve did not exit within {self.stop_s:.1f} s of SIGTERM")
        elif self.exit_code != self.expected_exit:
            f.append(f"serve exited {self.exit_code} after SIGTERM (documented: {self.expected_exit})")
        if self.stop_s > self.stop_bound_s:
            f.append(f"serve took {self.stop_s:.1f} s to stop (bound: --shutdown-grace-s + 5 = {self.stop_bound_s:.1f})")
        return f

    def print_summary(self, failures):
        k = self.stats.kinds
        done = self.stats.completed
        print(f"[soak] load {self.load_s:.0f} s, {self.args.clients} clients, serve --parallel {self.args.parallel}: "
              f"{done} requests ({done / max(self.load_s, 1e-9):.0f}/s)")
        print("[soak] by kind: " + ", ".join(f"{name} {n}" for name, n in sorted(k.items())))
        print(f"[soak] cancelled: {k.get('stream_cancelled', 0)} streams midway, "
              f"{k.get('whole_cancelled', 0)} whole answers, {k.get('partial_body', 0)} half-sent bodies; "
              f"mismatches {len(self.stats.mismatches)}, failed requests {len(self.stats.errors)}")
        self.print_resources()
        h = sorted(self.stats.health_ms)
        if h:
            print(f"[soak] /health under load: p50 {h[len(h) // 2]:.1f} ms, p99 {h[int(len(h) * 0.99)]:.1f} ms, "
                  f"max {h[-1]:.1f} ms ({len(h)})")
        m = self.metrics
        print(f"[soak] prefix cache: {m.get('offgraph:prefix_cache_hits_total', 0):.0f} hits of "
              f"{m.get('offgraph:prefix_cache_queries_total', 0):.0f}, "
              f"{m.get('offgraph:prefix_cache_evictions_total', 0):.0f} evictions, disk tier "
              f"{m.get('offgraph:prefix_cache_disk_writes_total', 0):.0f} writes "
              f"{m.get('offgraph:prefix_cache_disk_hits_total', 0):.0f} hits")
        print(f"[soak] access log: statuses {dict(sorted(self.statuses.items()))}, "
              f"finish reasons {dict(sorted(self.finishes.items()))}")
        code = "none" if self.exit_code is None else self.exit_code
        print(f"[soak] SIGTERM: exit {code} in {self.stop_s:.2f} s (bound {self.stop_bound_s:.1f} s)")
        if self.kept:
            print(f"[soak] --inject fd-leak: the clients kept {self.kept} connections open")
        for line in failures:
            print(f"[soak] FAILED: {line}")

    def print_resources(self):
        s = self.samples
        if not s:
            print("[soak] no resource samples")
            return
        rss = [v / 1024 for v in window_medians(s, 1)]
        fds = window_medians(s, 2)
        th = window_medians(s, 3)
        flat = "checked" if len(s) >= MIN_FLAT_SAMPLES else f"not checked: under {MIN_FLAT_SAMPLES} samples"
        print(f"[soak] {len(s)} samples (medians of thirds first/middle/last; flatness {flat}):")
        print(f"[soak]   RSS MiB {rss[0]:.1f} / {rss[1]:.1f} / {rss[2]:.1f} (max {max(x[1] for x in s) / 1024:.1f}; "
              f"growth {rss[2] - rss[1]:+.2f}, bound {self.args.rss_bound_mib}; "
              f"{requests_between_windows(s)} requests between the windows)")
        print(f"[soak]   fds {fds[0]:.0f} / {fds[1]:.0f} / {fds[2]:.0f} (max {max(x[2] for x in s)}; "
              f"bound +{self.args.fd_bound}); threads {th[0]:.0f} / {th[1]:.0f} / {th[2]:.0f}")
        print(f"[soak]   idle before/after the load: RSS MiB {self.before[0] / 1024:.1f} / {self.after[0] / 1024:.1f}, "
              f"fds {self.before[1]} / {self.after[1]}, threads {self.before[2]} / {self.after[2]}")


def synthetic(seconds, rate, rss_leak_per_req=0.0, fds_per_1000=0.0, seed=3):
    """Samples of a server at `rate` requests/s with noise like the measured runs'."""
    rng = random.Random(seed)
    out = []
    for t in range(seconds):
        done = t * rate
        warm = min(1.0, t / (seconds / 3))  # RSS climbs through the first third
        rss_kb = 15000 + 6000 * warm + rng.uniform(-700, 700) + rss_leak_per_req * done / 1024
        fds = 14 + rng.randint(0, 16) + int(fds_per_1000 * done / 1000)
        out.append((float(t), rss_kb, fds, 89, done))
    return out


def self_test():
    """The flatness checks on synthetic series: flat passes, leaks fail."""
    cases = [
        ("flat, 180 s at 400/s", synthetic(180, 400), False),
        ("flat, 180 s at 60/s", synthetic(180, 60), False),
        ("1 KiB/request at 400/s", synthetic(180, 400, rss_leak_per_req=1024), True),
        ("1 KiB/request at 100/s", synthetic(180, 100, rss_leak_per_req=1024), True),
        ("1 fd per 1,000 requests at 300/s", synthetic(180, 300, fds_per_1000=1), True),
        ("1 fd per 500 requests at 100/s", synthetic(180, 100, fds_per_1000=2), True),
        ("a leak in a run too short to judge", synthetic(30, 400, rss_leak_per_req=4096), False),
    ]
    bad = 0
    for name, samples, should_fail in cases:
        failures = flatness_failures(samples, RSS_BOUND_MIB, FD_BOUND)
        ok = bool(failures) == should_fail
        bad += not ok
        print(f"[self-test] {'ok  ' if ok else 'FAIL'} {name}: {failures or 'flat'}")
    return 1 if bad else 0
