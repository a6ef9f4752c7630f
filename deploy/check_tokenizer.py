#!/usr/bin/python3
"""Checks that the endpoint picker's tokenizer sidecar (llm-d's UDS tokenizer in
the offgraph-epp pod) turns requests into the token ids an offgraph replica
uses: if they differ, the picker looks up blocks no replica stored and the
precise prefix scorer scores every replica 0.

For each prompt and chat below (or --prompt / --chat of your own), it asks

- the sidecar, inside its container (`kubectl exec`), over its Unix socket
  with the gRPC stubs its image ships: RenderCompletion and
  RenderChatCompletion, as the picker does;
- a replica's POST /tokenize (vLLM's route), at --offgraph-url: a
  `kubectl port-forward svc/offgraph 8000:8000` in another shell gives
  http://127.0.0.1:8000;

and prints, for each, "same" or where the ids part. Exit 0 when all agree, 1
when one differs, 2 on a usage or connection error. Not run by the test suite
(it needs a cluster with deploy/kubernetes applied and the model's tokenizer
downloaded by the sidecar).

usage: check_tokenizer.py [--namespace offgraph] [--offgraph-url URL]
                          [--model NAME] [--prompt TEXT]... [--chat JSON]...
"""
import argparse
import json
import subprocess
import sys
import urllib.error
import urllib.request

PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "  Leading spaces, trailing spaces  ",
    "Numbers 1234567890, punctuation!?;: and unicode: café, naïve, 東京, 🙂",
    "def f(x):\n    return x * 2\n\nprint(f(21))",
]
CHATS = [
    [{"role": "user", "content": "Hello! What is the capital of France?"}],
    [{"role": "system", "content": "You are terse."},
     {"role": "user", "content": "Name three primes."},
     {"role": "assistant", "content": "2, 3, 5."},
     {"role": "user", "content": "Three more?"}],
]

# Runs in the sidecar's container: its image has grpc and the stubs in /app.
SIDECAR_CODE = r"""
import json, sys
sys.path.insert(0, "/app")
import grpc
from tokenizerpb import tokenizer_pb2 as pb, tokenizer_pb2_grpc as pbg
req = json.loads(sys.stdin.read())
stub = pbg.TokenizationServiceStub(grpc.insecure_channel("unix://" + req["socket"]))
init = stub.InitializeTokenizer(pb.InitializeTokenizerRequest(model_name=req["model"]), timeout=600)
if not init.success:
    print(json.dumps({"error": "InitializeTokenizer: " + init.error_message}))
    sys.exit(0)
out = {"prompts": [], "chats": []}
for p in req["prompts"]:
    r = stub.RenderCompletion(pb.RenderCompletionRequest(model_name=req["model"], prompt=p), timeout=60)
    out["prompts"].append(list(r.token_ids) if r.success else {"error": r.error_message})
for chat in req["chats"]:
    msgs = [pb.ChatMessage(role=m["role"], content=m["content"]) for m in chat]
    r = stub.RenderChatCompletion(pb.RenderChatCompletionRequest(
        model_name=req["model"], messages=msgs, add_generation_prompt=True), timeout=60)
    out["chats"].append(list(r.token_ids) if r.success else {"error": r.error_message})
print(json.dumps(out))
"""


def fail(msg, code=2):
    print(f"check_tokenizer: {msg}", file=sys.stderr)
    sys.exit(code)


def sidecar_ids(ns, deployment, container, socket, model, prompts, chats):
    req = json.dumps({"socket": socket, "model": model, "prompts": prompts, "chats": chats})
    cmd = ["kubectl", "-n", ns, "exec", "-i", f"deploy/{deployment}", "-c", container, "--",
           "python", "-c", SIDECAR_CODE]
    try:
        p = subprocess.run(cmd, input=req, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        fail(f"kubectl exec into {deployment}/{container}: {e}")
    if p.returncode != 0:
        fail(f"kubectl exec into {deployment}/{container} exited {p.returncode}: {p.stderr.strip()[-500:]}")
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        fail(f"the sidecar printed no JSON: {p.stdout[-300:]!r} {p.stderr[-300:]!r}")
    if "error" in out:
        fail(f"the sidecar: {out['error']}")
    return out


def offgraph_ids(url, model, body):
    data = json.dumps(dict(body, model=model)).encode()
    req = urllib.request.Request(url.rstrip("/") + "/tokenize", data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)["tokens"]
    except urllib.error.HTTPError as e:
        return {"error": f"{e.code} {e.read().decode(errors='replace')[:200]}"}
    except OSError as e:
        fail(f"POST {url}/tokenize: {e}")


def compare(what, ours, theirs):
    if isinstance(ours, dict) or isinstance(theirs, dict):
        print(f"ERROR {what}: offgraph {ours if isinstance(ours, dict) else 'ok'}, "
              f"sidecar {theirs if isinstance(theirs, dict) else 'ok'}")
        return False
    if ours == theirs:
        print(f"same  {what} ({len(ours)} tokens)")
        return True
    i = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    print(f"DIFF  {what}: {len(ours)} vs {len(theirs)} tokens, first difference at {i}: "
          f"offgraph {ours[i:i + 8]} sidecar {theirs[i:i + 8]}")
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--namespace", default="offgraph")
    ap.add_argument("--offgraph-url", default="http://127.0.0.1:8000")
    ap.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct",
                    help="the tokenizer plugin's modelName (the replicas' MODEL_NAME)")
    ap.add_argument("--epp-deployment", default="offgraph-epp")
    ap.add_argument("--container", default="tokenizer-uds")
    ap.add_argument("--socket", default="/tmp/tokenizer/tokenizer-uds.socket")
    ap.add_argument("--prompt", action="append", help="a completion prompt to compare (repeatable)")
    ap.add_argument("--chat", action="append", help='a JSON list of {"role", "content"} messages (repeatable)')
    a = ap.parse_args()
    prompts = a.prompt or PROMPTS
    try:
        chats = [json.loads(c) for c in a.chat] if a.chat else CHATS
    except ValueError as e:
        fail(f"--chat is not JSON: {e}")
    side = sidecar_ids(a.namespace, a.epp_deployment, a.container, a.socket, a.model, prompts, chats)
    ok = True
    for p, theirs in zip(prompts, side["prompts"]):
        ok &= compare(f"prompt {p[:40]!r}", offgraph_ids(a.offgraph_url, a.model, {"prompt": p}), theirs)
    for c, theirs in zip(chats, side["chats"]):
        ours = offgraph_ids(a.offgraph_url, a.model, {"messages": c, "add_generation_prompt": True})
        ok &= compare(f"chat of {len(c)} messages", ours, theirs)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
