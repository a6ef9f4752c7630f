"""`python3 -m offgraph` runs the offgraph program built with the package: same output and exit codes."""
import subprocess
import sys

from conftest import CONTINUATION, PROMPT


def cli(*args):
    return subprocess.run([sys.executable, "-m", "offgraph", *args], capture_output=True, text=True, timeout=120)


def test_version():
    p = cli("--version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("offgraph 0.")


def test_run_greedy(model_path):
    p = cli("run", "--model", model_path, "--prompt", PROMPT, "-n", "60", "--temp", "0")
    assert p.returncode == 0, p.stderr
    assert p.stdout.rstrip("\n") == CONTINUATION  # run prints the continuation only


def test_bad_usage_exit_codes(model_path):
    p = cli("frobnicate")
    assert p.returncode == 2
    assert "unknown command 'frobnicate'" in p.stderr
    p = cli("run", "--model", model_path + ".missing", "--prompt", "x")
    assert p.returncode == 1
    assert "error:" in p.stderr
    p = cli("run", "--model", model_path, "--prompt", "x", "--threads", "zero")
    assert p.returncode == 2
