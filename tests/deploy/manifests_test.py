#!/usr/bin/python3
"""The deployment files stay consistent with each other and with the server:
every Kubernetes manifest in deploy/kubernetes parses and has kind, apiVersion
and metadata.name; the kustomization lists exactly the manifests; the
Deployment's flags exist in `offgraph serve --help`, its probes hit /ready and
/health on the container port, its grace period covers the drain; the Service,
InferencePool and the picker's KV-event discovery select the pods' labels; the
endpoint picker config names our metric names and the replicas' KV-event port,
topic prefix, block size and hash seed; haproxy.cfg passes `haproxy -c` and
keeps its health checks, balancing and retry policy; run-replicas.sh parses and
rejects bad arguments with a clear message.
The Deployment's own flags then start a real server on the test model
(loopback: host, port, threads and the KV-event address replaced), which
serves under MODEL_NAME and stops with 143 on SIGTERM.
Usage: manifests_test.py REPO_ROOT OFFGRAPH MODEL [HAPROXY]   (Debian's python3-yaml)"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import yaml

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_procs import (Children, TestFailure, check, free_port, request,  # noqa: E402
                          require_executable, run_bounded, start_replica)

METRICS = {"queuedRequestsSpec": "vllm:num_requests_waiting",
           "runningRequestsSpec": "vllm:num_requests_running",
           "kvUsageSpec": "vllm:kv_cache_usage_perc"}


def load_manifests(kdir):
    """{(kind, name): object} over every document of every .yaml file but the kustomization."""
    objs = {}
    for path in sorted(glob.glob(os.path.join(kdir, "*.yaml"))):
        name = os.path.basename(path)
        with open(path) as f:
            try:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
            except yaml.YAMLError as e:
                raise TestFailure(f"{name} does not parse: {e}")
        check(docs, f"{name} holds no object")
        for d in docs:
            check(isinstance(d, dict), f"{name}: a document is not a mapping")
            for key in ("apiVersion", "kind"):
                check(isinstance(d.get(key), str) and d[key], f"{name}: an object lacks {key}")
            meta = d.get("metadata") or {}
            check(isinstance(meta.get("name"), str) and meta["name"], f"{name}: a {d['kind']} lacks metadata.name")
            objs[(d["kind"], meta["name"])] = (name, d)
    return objs


def get(objs, kind, name):
    check((kind, name) in objs, f"no {kind} named {name} in deploy/kubernetes")
    return objs[(kind, name)][1]


def serve_flags(offgraph):
    """Every --flag named in `offgraph serve --help` (aliases included)."""
    p = subprocess.run([offgraph, "serve", "--help"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, f"`offgraph serve --help` exited {p.returncode}: {p.stderr[-300:]}")
    flags = set(re.findall(r"--[a-z0-9][a-z0-9-]*", p.stdout))
    check("--model" in flags and "--port" in flags, "serve --help lists --model and --port")
    return flags


def parse_args(args):
    """{'--flag': value or True} from ['serve', '--flag=value', '--flag', 'value', '--switch']."""
    out, i = {}, 1
    while i < len(args):
        a = args[i]
        check(a.startswith("--"), f"serve argument '{a}' is not a --flag")
        if "=" in a:
            k, v = a.split("=", 1)
            out[k] = v
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[a] = args[i + 1]
            i += 1
        else:
            out[a] = True
        i += 1
    return out


def check_deployment(objs, flags):
    dep = get(objs, "Deployment", "offgraph")
    check(dep["apiVersion"] == "apps/v1", "the Deployment is apps/v1")
    spec = dep["spec"]
    pod = spec["template"]
    labels = pod["metadata"]["labels"]
    sel = spec["selector"]["matchLabels"]
    check(all(labels.get(k) == v for k, v in sel.items()), "the Deployment's selector matches its pod labels")
    c = next((c for c in pod["spec"]["containers"] if c["name"] == "offgraph"), None)
    check(c is not None, "the Deployment has a container named offgraph")
    args = c["args"]
    check(args[0] == "serve", "the container runs `offgraph serve`")
    a = parse_args(args)
    for k in a:
        check(k in flags, f"Deployment flag {k} is not in `offgraph serve --help`")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    http = ports.get("http")
    check(http is not None and str(http) == a.get("--port"), "container port 'http' equals --port")
    check(a.get("--host") == "0.0.0.0", "the server listens on all pod addresses (--host 0.0.0.0)")
    for probe, path in (("readinessProbe", "/ready"), ("livenessProbe", "/health"), ("startupProbe", "/health")):
        g = c[probe]["httpGet"]
        check(g["path"] == path, f"{probe} asks {path}")
        check(g["port"] in (http, "http"), f"{probe} port {g['port']} is the container port {http}")
    grace = float(a["--shutdown-grace-s"])
    pre = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    tgps = pod["spec"]["terminationGracePeriodSeconds"]
    check(tgps >= pre + grace + 5, f"terminationGracePeriodSeconds {tgps} covers preStop {pre} + grace {grace} + 5 s")
    live = c["livenessProbe"]
    check(live["periodSeconds"] * live["failureThreshold"] > pre + grace,
          "liveness does not restart a draining server (period x failures > preStop + grace)")
    # The model file lies under a read-only mount of a PVC or hostPath volume.
    mount = next((m for m in c["volumeMounts"] if a["--model"].startswith(m["mountPath"].rstrip("/") + "/")), None)
    check(mount is not None and mount.get("readOnly"), "--model is under a read-only volume mount")
    vol = next(v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
    check("persistentVolumeClaim" in vol or "hostPath" in vol, "the model volume is a PVC or a hostPath")
    if "persistentVolumeClaim" in vol:
        get(objs, "PersistentVolumeClaim", vol["persistentVolumeClaim"]["claimName"])
    res = c["resources"]
    check("cpu" in res["requests"] and "memory" in res["limits"], "the container requests CPU and limits memory")
    check(a.get("--threads") == str(res["requests"]["cpu"]), "--threads equals the CPU request")
    env = {e["name"] for e in c.get("env", [])}
    for v in re.findall(r"\$\(([A-Z_]+)\)", " ".join(args)):
        check(v in env, f"$({v}) in the args is a container env variable")
    # The picker connects to each pod's socket, so the replica binds: a "*" host (vLLM's rule).
    check(a["--kv-events-endpoint"].startswith("tcp://*:"), "--kv-events-endpoint binds (tcp://*:PORT)")
    kv_port = int(a["--kv-events-endpoint"].rsplit(":", 1)[1])
    check(ports.get("kv-events") == kv_port, "container port 'kv-events' equals --kv-events-endpoint's port")
    return dep, labels, a, http, kv_port, c


def check_deployment_starts(offgraph, model, container):
    """The Deployment's serve flags, on loopback with the test model, start a server."""
    env = {e["name"]: e.get("value", "127.0.0.1") for e in container["env"]}  # POD_IP: loopback
    expand = lambda v: re.sub(r"\$\(([A-Z_]+)\)", lambda m: env[m.group(1)], v)  # noqa: E731
    # A connected (not bound) KV-event socket to a free loopback port: nothing listens off the host.
    loopback = {"--model": None, "--host": None, "--port": None, "--threads": "1",
                "--kv-events-endpoint": f"tcp://127.0.0.1:{free_port()}"}
    extra = []
    for k, v in parse_args(container["args"]).items():
        v = loopback.get(k, v)
        if v is not None:
            extra.append(k if v is True else f"{k}={expand(v)}")
    children = Children()
    with tempfile.TemporaryDirectory(prefix="og-manifest-") as tmp:
        try:
            proc, port = start_replica(children, offgraph, model, extra, os.path.join(tmp, "serve.err"))
            status, _, body = request(port, "GET", "/ready")
            check(status == 200, f"the Deployment's flags: /ready is {status}")
            status, _, body = request(port, "GET", "/v1/models")
            ids = [m["id"] for m in json.loads(body)["data"]]
            check(ids == [env["MODEL_NAME"]], f"the Deployment's flags serve the model as MODEL_NAME: {ids}")
            proc.send_signal(signal.SIGTERM)
            check(proc.wait(timeout=10) == 143, "the server stops with 143 on SIGTERM")
        except TestFailure:
            print(open(os.path.join(tmp, "serve.err"), errors="replace").read()[-2000:], file=sys.stderr)
            raise
        finally:
            children.kill_all()


def check_pool_and_service(objs, labels, http):
    svc = get(objs, "Service", "offgraph")
    check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "the Service selects the pods")
    check(any(p["targetPort"] in ("http", http) for p in svc["spec"]["ports"]), "the Service targets the http port")
    pool = get(objs, "InferencePool", "offgraph")
    check(pool["apiVersion"] == "inference.networking.k8s.io/v1", "the InferencePool is the GA API (v1)")
    ml = pool["spec"]["selector"]["matchLabels"]
    check(ml and all(labels.get(k) == v for k, v in ml.items()), "the InferencePool selector matches the pod labels")
    check([p["number"] for p in pool["spec"]["targetPorts"]] == [http], "the pool's targetPorts are the http port")
    ref = pool["spec"]["endpointPickerRef"]
    epp_svc = get(objs, "Service", ref["name"])
    check(any(p["port"] == ref["port"]["number"] for p in epp_svc["spec"]["ports"]),
          "endpointPickerRef's port is a port of the picker's Service")
    route = get(objs, "HTTPRoute", "offgraph")
    backends = [b for r in route["spec"]["rules"] for b in r["backendRefs"]]
    check(any(b.get("kind") == "InferencePool" and b["name"] == "offgraph" for b in backends),
          "the HTTPRoute sends traffic to the InferencePool")
    return pool


def check_epp(objs, labels, a, kv_port, namespace):
    cm = get(objs, "ConfigMap", "offgraph-epp-config")
    check(list(cm["data"]) == ["epp-config.yaml"], "the picker's ConfigMap holds epp-config.yaml")
    cfg = yaml.safe_load(cm["data"]["epp-config.yaml"])
    check(cfg["kind"] == "EndpointPickerConfig", "the ConfigMap holds an EndpointPickerConfig")
    plugins = {p.get("name", p["type"]): p for p in cfg["plugins"]}
    for t in ("queue-scorer", "kv-cache-utilization-scorer", "precise-prefix-cache-scorer", "max-score-picker",
              "metrics-data-source", "core-metrics-extractor"):
        check(t in plugins, f"the picker config declares {t}")
    refs = [p["pluginRef"] for prof in cfg["schedulingProfiles"] for p in prof["plugins"]]
    refs += [s["pluginRef"] for s in cfg["dataLayer"]["sources"]]
    refs += [e["pluginRef"] for s in cfg["dataLayer"]["sources"] for e in s["extractors"]]
    for r in refs:
        check(r in plugins, f"pluginRef {r} names a declared plugin")
    ext = plugins["core-metrics-extractor"]["parameters"]
    engine = next(e for e in ext["engineConfigs"] if e["name"] == ext["defaultEngine"])
    for k, v in METRICS.items():
        check(engine.get(k) == v, f"the picker's {k} is {v}")
    check(labels.get(ext["engineLabelKey"]) == engine["name"], "the pods' engine-type label names that engine")
    pp = plugins["precise-prefix-cache-scorer"]["parameters"]
    tp = pp["tokenProcessorConfig"]
    check(str(tp["blockSize"]) == a["--block-size"], "the picker's blockSize is the replicas' --block-size")
    check(tp["hashSeed"] == a["--prefix-hash-seed"], "the picker's hashSeed is the replicas' --prefix-hash-seed")
    ke = pp["kvEventsConfig"]
    check(a["--kv-events-topic"].startswith(ke["topicFilter"]), "--kv-events-topic starts with the topicFilter")
    check(a["--kv-events-topic"].count("@") == 2, "--kv-events-topic is kv@<pod>@<model>, as the picker parses it")
    pd = ke["podDiscoveryConfig"]
    check(pd["socketPort"] == kv_port, "the picker connects to the replicas' KV-event port")
    check(pd["podNamespace"] == namespace, "the picker discovers pods in the kustomization's namespace")
    for term in pd["podLabelSelector"].split(","):
        k, v = term.split("=")
        check(labels.get(k) == v, f"podLabelSelector term {term} matches the pod labels")
    epp = get(objs, "Deployment", "offgraph-epp")
    c = epp["spec"]["template"]["spec"]["containers"][0]
    ea = dict(x.split("=", 1) for x in c["args"])
    check(ea["--pool-name"] == "offgraph" and ea["--pool-namespace"] == namespace,
          "the picker watches the InferencePool offgraph in the kustomization's namespace")
    mount = next(m for m in c["volumeMounts"] if ea["--config-file"].startswith(m["mountPath"] + "/"))
    vol = next(v for v in epp["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    check(vol["configMap"]["name"] == "offgraph-epp-config"
          and os.path.basename(ea["--config-file"]) in cm["data"], "--config-file is the ConfigMap's file")


def check_kubernetes(repo, offgraph, model):
    kdir = os.path.join(repo, "deploy/kubernetes")
    objs = load_manifests(kdir)
    kust = get(objs, "Kustomization", "offgraph")
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(kdir, "*.yaml")))
    check(sorted(kust["resources"]) == [f for f in files if f != "kustomization.yaml"],
          "kustomization.yaml lists exactly the other manifests")
    namespace = kust["namespace"]
    get(objs, "Namespace", namespace)
    dep, labels, a, http, kv_port, container = check_deployment(objs, serve_flags(offgraph))
    check_pool_and_service(objs, labels, http)
    check_epp(objs, labels, a, kv_port, namespace)
    check_deployment_starts(offgraph, model, container)


def check_haproxy(repo, haproxy):
    cfg = os.path.join(repo, "deploy/haproxy/haproxy.cfg")
    p = subprocess.run([haproxy, "-c", "-f", cfg], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, f"haproxy -c -f haproxy.cfg failed: {p.stdout[-500:]}{p.stderr[-500:]}")
    text = open(cfg).read()
    for line in ("balance leastconn", "option httpchk GET /ready", "retry-on conn-failure"):
        check(re.search(rf"^\s*{re.escape(line)}\s*$", text, re.M), f"haproxy.cfg has '{line}'")
    check(len(re.findall(r"^\s*retry-on\b", text, re.M)) == 1, "conn-failure is the only retry-on condition")
    m = re.search(r"default-server .*\binter (\d+)ms\b.*\bfall (\d+)\b", text)
    check(m and int(m.group(1)) * int(m.group(2)) <= 2000, "health checks drop a dead replica within 2 s")
    check(re.search(r"^\s*timeout server 600s", text, re.M), "the server timeout fits long generations (600 s)")
    script = os.path.join(repo, "deploy/haproxy/run-replicas.sh")
    check(os.access(script, os.X_OK), "run-replicas.sh is executable")
    check(subprocess.run(["bash", "-n", script]).returncode == 0, "run-replicas.sh parses (bash -n)")
    check(subprocess.run([script, "--help"], capture_output=True).returncode == 0, "run-replicas.sh --help exits 0")
    for bad, says in ((["--replicas", "2"], "--model is required"),
                      (["--model", cfg, "--replicas", "0"], "--replicas '0' is not a whole number in [1, 64]"),
                      (["--model", cfg, "--port", "70000"], "--port '70000' is not a port number"),
                      (["--model", cfg, "--port", "9001", "--first-replica-port", "9000"], "one of the replicas' ports"),
                      (["--model", "/nonexistent/m.gguf"], "does not exist"),
                      (["--model", cfg, "--bogus"], "unknown argument '--bogus'")):
        p = subprocess.run([script] + bad, capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and says in p.stderr,
              f"run-replicas.sh {' '.join(bad)}: exit {p.returncode}, stderr {p.stderr.strip()!r}; expected 2 and '{says}'")


def main():
    repo, offgraph, model = sys.argv[1:4]
    haproxy = sys.argv[4] if len(sys.argv) > 4 else "/usr/sbin/haproxy"
    require_executable(haproxy, "haproxy")
    check_kubernetes(repo, offgraph, model)
    check_haproxy(repo, haproxy)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("Usage: ")[1].split("\n")[0].join(("usage: ", "")))
    run_bounded(main, 60)
