"""The Python examples (examples/python/) run and print what they should."""
import os
import subprocess
import sys

from conftest import CONTINUATION, PROMPT

EXAMPLES = os.path.join(os.path.dirname(__file__), "../../examples/python")


def run(name, model_path):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), model_path], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_generate(model_path):
    assert run("generate.py", model_path) == PROMPT + CONTINUATION + "\n"


def test_stream(model_path):
    assert run("stream.py", model_path) == PROMPT + CONTINUATION + "\n"


def test_chat_undo(model_path):
    out = run("chat_undo.py", model_path)
    assert "same: True" in out
    assert "reply: , there was a little girl" in out


def test_batch(model_path):
    out = run("batch.py", model_path)
    assert out.startswith("'Once upon a time' -> ', there was a little girl named Lily.")
    assert "finished: 3" in out
