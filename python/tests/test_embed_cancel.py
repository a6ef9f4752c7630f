"""Model.embed (the vectors of POST /v1/embeddings, bit for bit), Model.info's embedding facts, the
clear error of generating from an embedding-only model, and Ctrl-C during a long prefill."""
import base64
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import urllib.request

import pytest

import offgraph
from offgraph.__main__ import program


@pytest.fixture(scope="module")
def synth_dir():
    with tempfile.TemporaryDirectory(prefix="og-py-embed-") as d:
        yield d


def synth(directory, family):
    out = os.path.join(directory, family + ".gguf")
    if not os.path.exists(out):
        tool = os.path.join(os.path.dirname(program()), "og-synth")
        subprocess.run([tool, "--family", family, "--embedding", "--format", "gguf", "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
    return out


def served_embeddings(model_path, texts):
    """POST /v1/embeddings to `offgraph serve` on a free loopback port, float32 vectors from base64."""
    p = subprocess.Popen([program(), "serve", "--model", model_path, "--host", "127.0.0.1", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in p.stdout:
            m = re.search(r"ready on http://127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, p.stderr.read()
        body = json.dumps({"input": texts, "encoding_format": "base64"}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", body,
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = json.load(r)["data"]
        out = []
        for d in data:
            raw = base64.b64decode(d["embedding"])
            out.append(list(struct.unpack(f"<{len(raw) // 4}f", raw)))
        return out
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)


@pytest.mark.parametrize("family", ["bert", "qwen3"])
def test_embed_equals_the_server_bit_for_bit(synth_dir, family):
    path = synth(synth_dir, family)
    texts = ["Once upon a time", "The cat sat on the mat", "A dog"]
    m = offgraph.Model(path)
    mine = m.embed(texts)
    assert len(mine) == 3 and len(mine[0]) == m.info["embedding_dim"]
    theirs = served_embeddings(path, texts)
    # float32 -> Python float is exact, so equality here is equality of the bits.
    assert mine == theirs
    one = m.embed(texts[0])
    assert isinstance(one[0], float) and len(one) == m.info["embedding_dim"]
    short = m.embed(texts[0], dimensions=8)
    assert len(short) == 8 and abs(sum(x * x for x in short) - 1) < 1e-5


def test_info_and_embedding_only_models(synth_dir, model):
    assert model.info["generates"] and not model.info["embeds"] and model.info["pooling"] == ""
    with pytest.raises(offgraph.InvalidArgumentError, match="is not an embedding model"):
        model.embed("hello")
    bert = offgraph.Model(synth(synth_dir, "bert"))
    info = bert.info
    assert not info["generates"] and info["embeds"] and info["pooling"] == "cls" and info["embedding_dim"] > 0
    with pytest.raises(offgraph.InvalidArgumentError, match="only embeds .* use og_embed"):
        bert.session()
    with pytest.raises(offgraph.InvalidArgumentError, match="only embeds"):
        bert.engine()
    with pytest.raises(offgraph.InvalidArgumentError, match=r"texts\[1\] is empty"):
        bert.embed(["a", ""])
    with pytest.raises(offgraph.InvalidArgumentError, match="dimensions 100000"):
        bert.embed("a", dimensions=100000)


def test_ctrl_c_stops_a_long_prefill(model_path):
    # A 4000-token prompt prefilled one row at a time takes hundreds of ms: SIGINT 50 ms after it
    # starts stops it mid-way (generate keeps the prompt, cut; prefill takes it back whole).
    script = textwrap.dedent(f"""
        import signal, sys, offgraph
        signal.signal(signal.SIGINT, signal.default_int_handler)
        m = offgraph.Model({model_path!r})
        s = m.session(kv_max_capacity=8192, prefill_chunk_size=1)
        ids = [1] + [260 + i % 200 for i in range(3999)]
        print("started", flush=True)
        try:
            s.generate(ids, max_new_tokens=5)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", s.stats()["cache_positions"] < 3999, flush=True)
        s.reset()
        s.prefill(ids[:5])
        print("started", flush=True)
        try:
            s.prefill(ids[5:])
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", s.position, s.stats()["cache_positions"], flush=True)
        s.undo()
        print("usable", s.position, s.generate(ids[:5], max_new_tokens=3).stop_reason, flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import time
    lines = []
    for _ in range(2):
        line = p.stdout.readline().strip()
        assert line == "started", (line, p.stderr.read())
        time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        lines.append(p.stdout.readline().strip())
    out = p.stdout.read()  # not communicate(): it would skip what readline() already buffered
    err = p.stderr.read()
    assert p.wait(timeout=120) == 0, err
    assert lines == ["interrupted True", "interrupted 5 5"], (lines, err)
    assert out.strip() == "usable 0 max_new_tokens", (out, err)
