"""Images in Session.chat and Model.create_chat_completion (OpenAI's image_url parts with data: URLs,
{"type": "image"} parts with bytes) on og-synth's tiny Gemma 3 with a vision tower (--vision, its mmproj
beside it); the PNGs are written by the test. The same image gives the same reply and logits, another
image other logits; bad parts and images are InvalidArgumentError naming them."""
import base64
import os
import struct
import subprocess
import tempfile
import zlib

import pytest

import offgraph

SYNTH = os.environ.get("OG_SYNTH", os.path.join(os.path.dirname(offgraph.__file__), "..", "..", "og-synth"))
OFFGRAPH = os.path.join(os.path.dirname(SYNTH), "offgraph")


def png(w, h, rgb):
    raw = b"".join(b"\x00" + bytes(v for x in range(w) for v in rgb(x, y)) for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


A = png(40, 30, lambda x, y: ((x * 7) % 256, (y * 5) % 256, (x + y) % 256))
B = png(40, 30, lambda x, y: (200, 10, 10))


def url(b):
    return "data:image/png;base64," + base64.b64encode(b).decode()


def ask(image_part, text="What is it?"):
    return [{"role": "user", "content": [image_part, {"type": "text", "text": text}]}]


@pytest.fixture(scope="module")
def files():
    assert os.path.exists(SYNTH), f"og-synth is missing (build it): {SYNTH}"
    with tempfile.TemporaryDirectory() as d:
        m, p = os.path.join(d, "m.gguf"), os.path.join(d, "p.gguf")
        subprocess.run([SYNTH, "--family", "gemma3", "--vision", "--format", "gguf", "--out", m, "--mmproj-out", p],
                       check=True, stdout=subprocess.DEVNULL)
        yield d, m, p


@pytest.fixture(scope="module")
def model(files):
    _, m, p = files
    return offgraph.Model(m, mmproj=p)


def test_image_url_parts_and_bytes_give_the_same_reply_as_run(model, files):
    d, m, p = files
    s = model.session()
    r = s.chat(ask({"type": "image_url", "image_url": {"url": url(A)}}), max_new_tokens=12, temperature=0)
    assert r.usage["prompt_tokens"] > 4
    r2 = model.session().chat(ask({"type": "image", "image": A}), max_new_tokens=12, temperature=0)
    assert r2.content == r.content
    c = model.create_chat_completion(ask({"type": "image_url", "image_url": url(A)}), max_tokens=12,
                                     temperature=0)
    assert c["choices"][0]["message"]["content"] == r.content
    path = os.path.join(d, "a.png")
    with open(path, "wb") as f:
        f.write(A)
    out = subprocess.run([OFFGRAPH, "run", "-m", m, "--mmproj", p, "--image", path, "-p", "What is it?",
                          "--max-new-tokens", "12", "--temperature", "0"], check=True, capture_output=True)
    assert out.stdout.decode() == r.content


def test_another_image_changes_the_logits(model):
    def logits(b):
        s = model.session()
        s.chat(ask({"type": "image", "image": b}), max_new_tokens=1, temperature=0)
        return list(s.logits())

    assert logits(A) == logits(A)
    assert logits(A) != logits(B)


def test_bad_image_parts_are_refused_naming_them(model, files):
    s = model.session()
    with pytest.raises(offgraph.InvalidArgumentError, match="image URLs are not fetched; send a data: URL"):
        s.chat(ask({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}))
    with pytest.raises(offgraph.InvalidArgumentError, match=r"messages\[0\]\.content\[0\]\.image_url\.url"):
        s.chat(ask({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}))
    with pytest.raises(offgraph.InvalidArgumentError, match=r"'images\[0\]': image: png: truncated data"):
        s.chat(ask({"type": "image", "image": A[:60]}))
    with pytest.raises(offgraph.InvalidArgumentError, match=r"messages\[0\]\.content\[0\]"):
        s.chat(ask({"type": "audio"}))
    with pytest.raises(offgraph.InvalidArgumentError, match="images go in user messages"):
        s.chat([{"role": "system", "content": [{"type": "image", "image": A}]}, {"role": "user", "content": "x"}])
    text_only = offgraph.Model(files[1])
    with pytest.raises(offgraph.InvalidArgumentError, match=r"this model has no vision tower \(pass --mmproj FILE\)"):
        text_only.session().chat(ask({"type": "image", "image": A}))


def test_no_mmproj_loads_an_hf_directory_without_its_tower(files):
    d, m, p = files
    hf = os.path.join(d, "hf")
    subprocess.run([SYNTH, "--family", "gemma3", "--vision", "--format", "hf", "--out", hf],
                   check=True, stdout=subprocess.DEVNULL)
    with_tower = offgraph.Model(hf)
    r = with_tower.session().chat(ask({"type": "image", "image": A}), max_new_tokens=2, temperature=0)
    assert r.usage["prompt_tokens"] > 4
    without = offgraph.Model(hf, no_mmproj=True)
    with pytest.raises(offgraph.InvalidArgumentError, match="this model has no vision tower"):
        without.session().chat(ask({"type": "image", "image": A}))
    assert without.session().chat([{"role": "user", "content": "hi"}], max_new_tokens=2, temperature=0).content \
        is not None
    with pytest.raises(offgraph.InvalidArgumentError, match="contradict"):
        offgraph.Model(m, mmproj=p, no_mmproj=True)
