#!/usr/bin/python3
"""The deployment files stay consistent with each other and with the server:
every Kubernetes manifest in deploy/kubernetes parses and has kind, apiVersion
and metadata.name; the kustomization lists exactly the manifests; the
Deployment's flags exist in `offgraph serve --help`, its probes hit /ready and
/health on the container port, its grace period covers the drain; the Service
and InferencePool select the pods' labels; the endpoint picker config names our
metric names and the replicas' KV-event port, topic prefix and block size; the
KV-event topic names the pod as <IP>:<the pool's target port> (llm-d v0.8.0's
precise scorer keys endpoints so); the picker has its tokenizer sidecar on the
socket its config names; the Istio DestinationRule (deploy/kubernetes/istio)
names the picker's Service with TLS; haproxy.cfg passes `haproxy -c` and keeps
its health checks, balancing and retry policy; run-replicas.sh parses and
rejects bad arguments with a clear message.
The Deployment's own flags then start a real server on the test model
(loopback: host, port, threads and the KV-event address replaced), which
serves under MODEL_NAME, publishes KV events that decode under llm-d's field
rules (tests/deploy/llmd_events.py) on the Deployment's topic, and stops with
143 on SIGTERM.
Usage: manifests_test.py REPO_ROOT OFFGRAPH MODEL [HAPROXY]
(Debian's python3-yaml, python3-zmq, python3-msgpack)"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import yaml
import zmq

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_procs import (Children, TestFailure, check, request,  # noqa: E402
                          require_executable, run_bounded, start_replica)
import llmd_events  # noqa: E402

# Where the test pretends the pod is: POD_IP in the Deployment's env.
POD_IP = "127.0.0.1"

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
    values = {e["name"]: e.get("value") for e in c.get("env", [])}
    check(values.get("POD_PORT") == a["--port"], "env POD_PORT (in the KV-event topic) equals --port")
    # The picker connects to each pod's socket, so the replica binds: a "*" host (vLLM's rule).
    check(a["--kv-events-endpoint"].startswith("tcp://*:"), "--kv-events-endpoint binds (tcp://*:PORT)")
    kv_port = int(a["--kv-events-endpoint"].rsplit(":", 1)[1])
    check(ports.get("kv-events") == kv_port, "container port 'kv-events' equals --kv-events-endpoint's port")
    return dep, labels, a, http, kv_port, c


def expand_env(container, pod_ip=POD_IP):
    """A function expanding $(VAR) from the container's env (POD_IP: pod_ip)."""
    env = {e["name"]: e.get("value", pod_ip) for e in container["env"]}
    env["POD_IP"] = pod_ip
    return env, lambda v: re.sub(r"\$\(([A-Z_]+)\)", lambda m: env[m.group(1)], v)


def receive_events(sub, until, seconds=5.0):
    """[(pod, model, seq, ts, events)] decoded by llm-d's rules until until(list) or the time is up."""
    out, deadline = [], time.time() + seconds
    while not until(out) and time.time() < deadline:
        if sub.poll(50):
            frames = sub.recv_multipart()
            try:
                pod, model, seq, payload = llmd_events.parse_message(frames)
                ts, events = llmd_events.decode_batch(payload)
            except llmd_events.DecodeError as e:
                raise TestFailure(f"a KV-event message breaks llm-d's decoding rules: {e}")
            out.append((pod, model, seq, ts, events))
    return out


def check_deployment_starts(offgraph, model, container, http, block_size):
    """The Deployment's serve flags, on loopback with the test model, start a
    server whose KV events, sent to a subscriber that binds (llm-d's
    centralized mode, so nothing listens off the host), decode as llm-d reads
    them and name the pod as the picker names its endpoint."""
    env, expand = expand_env(container)
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
    sub_port = sub.bind_to_random_port("tcp://127.0.0.1")
    loopback = {"--model": None, "--host": None, "--port": None, "--threads": "1",
                "--kv-events-endpoint": f"tcp://127.0.0.1:{sub_port}"}
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
            # A prompt of two whole blocks: its capture sends a BlockStored.
            for _ in range(10):
                sub.poll(20)  # lets the replica's connection and our subscription meet
            prompt = [(7 * i + 3) % 200 + 1 for i in range(2 * block_size + 3)]
            status, _, body = request(port, "POST", "/v1/completions",
                                      {"model": env["MODEL_NAME"], "prompt": prompt, "max_tokens": 1})
            check(status == 200, f"a completion on the Deployment's flags: {status} {body[:200]!r}")
            got = receive_events(sub, lambda ms: any(e["type"] == "BlockStored" for m in ms for e in m[4]))
            stored = [e for m in got for e in m[4] if e["type"] == "BlockStored"]
            check(stored, "the Deployment's replica publishes BlockStored for a two-block prompt")
            want_pod = f"{POD_IP}:{http}"
            for pod, name, _, _, _ in got:
                check(pod == want_pod, f"the topic names the pod {pod!r}, the picker's endpoint key is {want_pod!r}")
                check(name == env["MODEL_NAME"], f"the topic names the model {name!r}")
            for e in stored:
                check(e["block_size"] == block_size, "BlockStored's block_size is the picker's blockSize")
                check(len(e["tokens"]) == block_size * len(e["hashes"]), "block_size tokens per stored hash")
                check(e["medium"].lower() == "cpu", f"medium {e['medium']!r} (the picker weighs it as cpu)")
            check(stored and stored[0]["tokens"] == prompt[:len(stored[0]["tokens"])],
                  "the first stored tokens are the prompt's")
            proc.send_signal(signal.SIGTERM)
            check(proc.wait(timeout=10) == 143, "the server stops with 143 on SIGTERM")
        except TestFailure:
            print(open(os.path.join(tmp, "serve.err"), errors="replace").read()[-2000:], file=sys.stderr)
            raise
        finally:
            children.kill_all()
            sub.close()
            ctx.term()


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


def check_epp(objs, labels, a, kv_port, namespace, http, dep_container):
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
    ke = pp["kvEventsConfig"]
    check(a["--kv-events-topic"].startswith(ke["topicFilter"]), "--kv-events-topic starts with the topicFilter")
    # llm-d v0.8.0 keys an endpoint as "<address>:<port>" (the pool's target
    # port) and finds a replica's events by the pod the topic names.
    _, expand = expand_env(dep_container, "10.1.2.3")
    pod, name = llmd_events.parse_topic(expand(a["--kv-events-topic"]))
    check(pod == f"10.1.2.3:{http}",
          f"--kv-events-topic names the pod as <pod IP>:<target port> (10.1.2.3:{http}), not {pod!r}")
    check(name and name == expand("$(MODEL_NAME)"), "--kv-events-topic ends with the served model name")
    pd = ke["podDiscoveryConfig"]
    check(ke.get("discoverPods") is True and pd["socketPort"] == kv_port,
          "the picker connects to each endpoint's KV-event port")
    check("podLabelSelector" not in pd and "podNamespace" not in pd,
          "no podLabelSelector/podNamespace: v0.8.0 discovers the pool's endpoints, and ignores them")
    feeds = [e["pluginRef"] for src in cfg["dataLayer"]["sources"] if src["pluginRef"] == "endpoint-notification-source"
             for e in src["extractors"]]
    check("precise-prefix-cache-scorer" in feeds, "the pool's endpoint notices feed the precise scorer")
    model_name = expand("$(MODEL_NAME)")
    tok = plugins.get("tokenizer")
    check(tok is not None, "the picker config declares the tokenizer plugin")
    sock = tok["parameters"]["udsTokenizerConfig"]["socketFile"]
    check(tok["parameters"]["modelName"] == model_name, "the tokenizer plugin loads MODEL_NAME's tokenizer")
    pool_cfg = pp["indexerConfig"]["tokenizersPoolConfig"]
    check(pool_cfg["modelName"] == model_name and pool_cfg.get("uds", {}).get("socketFile") == sock,
          "the scorer's fallback tokenizer is the same sidecar socket")
    check("hf" not in pool_cfg, "no `hf` tokenizer section (the v0.8.0 image ignores it)")
    profile = [p["pluginRef"] for p in cfg["schedulingProfiles"][0]["plugins"]]
    check(profile.index("tokenizer") < profile.index("precise-prefix-cache-scorer"),
          "the tokenizer runs before the precise scorer in the profile")
    epp = get(objs, "Deployment", "offgraph-epp")
    pod_spec = epp["spec"]["template"]["spec"]
    c = pod_spec["containers"][0]
    side = next((x for x in pod_spec["containers"][1:] if "llm-d-uds-tokenizer" in x["image"]), None)
    check(side is not None, "the picker's pod runs llm-d's UDS tokenizer sidecar")
    mounts = lambda ctr: {m["mountPath"].rstrip("/"): m["name"] for m in ctr.get("volumeMounts", [])}  # noqa: E731
    sock_dir = os.path.dirname(sock)
    check(sock_dir in mounts(c) and mounts(side).get(sock_dir) == mounts(c)[sock_dir],
          f"the picker and the sidecar share the socket directory {sock_dir}")
    vol = next(v for v in pod_spec["volumes"] if v["name"] == mounts(c)[sock_dir])
    check("emptyDir" in vol, "the socket directory is a pod-local emptyDir")
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
    pool = check_pool_and_service(objs, labels, http)
    check_epp(objs, labels, a, kv_port, namespace, http, container)
    check_istio(kdir, namespace, pool)
    check_deployment_starts(offgraph, model, container, http, int(a["--block-size"]))


def check_istio(kdir, namespace, pool):
    """deploy/kubernetes/istio: a DestinationRule giving Istio's gateway TLS to the picker's Service."""
    idir = os.path.join(kdir, "istio")
    objs = load_manifests(idir)
    kust = get(objs, "Kustomization", "offgraph-istio")
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(idir, "*.yaml")))
    check(sorted(kust["resources"]) == [f for f in files if f != "kustomization.yaml"],
          "istio/kustomization.yaml lists exactly the other manifests")
    check(kust["namespace"] == namespace, "the Istio objects go to the same namespace")
    rules = [d for (kind, _), (_, d) in objs.items() if kind == "DestinationRule"]
    check(len(rules) == 1, "one DestinationRule")
    dr = rules[0]
    epp = pool["spec"]["endpointPickerRef"]["name"]
    check(dr["spec"]["host"] == f"{epp}.{namespace}.svc.cluster.local",
          f"the DestinationRule's host is the picker's Service {epp}.{namespace}.svc.cluster.local")
    tls = dr["spec"]["trafficPolicy"]["tls"]
    check(tls["mode"] == "SIMPLE" and tls.get("insecureSkipVerify") is True,
          "TLS to the picker's self-signed certificate (SIMPLE, insecureSkipVerify)")


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
