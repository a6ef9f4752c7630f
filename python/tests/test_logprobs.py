"""Session.generate(logprobs=True, top_logprobs=N), and Session.save/load. Logprobs: each generated token's log-softmax of the raw logits
(as the server reports them) and its most likely alternatives; bounds; the engine refuses them."""
import math

import pytest

import offgraph
from conftest import PROMPT


def test_logprobs_per_generated_token(model):
    s = model.session()
    g = s.generate(PROMPT, max_new_tokens=10, logprobs=True, top_logprobs=3)
    assert g.logprobs is not None and len(g.logprobs) == len(g.tokens) == 10
    for tok, lp in zip(g.tokens, g.logprobs):
        assert lp["token"] == tok and lp["logprob"] <= 0
        assert len(lp["top_logprobs"]) == 3
        assert lp["top_logprobs"][0] == (tok, lp["logprob"])  # greedy: the most likely one
    # The last token's logprob is the log-softmax of the logits it was drawn from.
    logits = [float(x) for x in s.logits()]
    m = max(logits)
    lse = m + math.log(sum(math.exp(x - m) for x in logits))
    assert abs(g.logprobs[-1]["logprob"] - (logits[g.tokens[-1]] - lse)) < 1e-5
    # A stream's result carries them too; without the option they are None.
    s.reset()
    st = s.stream(PROMPT, max_new_tokens=10, logprobs=True)
    "".join(st)
    assert [x["logprob"] for x in st.result.logprobs] == [x["logprob"] for x in g.logprobs]
    assert st.result.logprobs[0]["top_logprobs"] == []
    s.reset()
    assert s.generate(PROMPT, max_new_tokens=3).logprobs is None


def test_logprobs_bounds(model):
    s = model.session()
    with pytest.raises(offgraph.InvalidArgumentError, match=r"top_logprobs is 21, outside \[0, 20\]"):
        s.generate(PROMPT, max_new_tokens=3, top_logprobs=21)
    with model.engine() as e:
        with pytest.raises(offgraph.InvalidArgumentError, match="not by the engine"):
            e.submit(PROMPT, logprobs=True)


def test_save_and_load_continue_exactly(model, tmp_path):
    a = model.session()
    a.generate(PROMPT, max_new_tokens=15)
    path = tmp_path / "s.ogs"
    a.save(path)
    want = a.generate(None, max_new_tokens=20).tokens
    b = model.session()
    b.load(path)
    assert b.position == a.position - 20
    assert b.generate(None, max_new_tokens=20).tokens == want
    with pytest.raises(offgraph.NotFoundError):
        b.load(tmp_path / "missing.ogs")
    (tmp_path / "bad.ogs").write_bytes(path.read_bytes()[:100])
    with pytest.raises(offgraph.InvalidArgumentError, match="truncated"):
        b.load(tmp_path / "bad.ogs")
    with pytest.raises(offgraph.InvalidArgumentError, match="kv_dtype f16, this session stores f32"):
        model.session(kv_dtype="f32").load(path)


def test_sampler_bounds_are_the_servers(model):
    # runtime/generation_limits.h: the server's bound and words, under the C option's name.
    s = model.session()
    with pytest.raises(offgraph.InvalidArgumentError, match=r"^sampler.temperature is 3, outside \[0, 2\]$"):
        s.generate(PROMPT, max_new_tokens=3, temperature=3)
    with pytest.raises(offgraph.InvalidArgumentError, match=r"^sampler.top_p is 0, outside \(0, 1\]$"):
        s.generate(PROMPT, max_new_tokens=3, temperature=1, top_p=0)
    with pytest.raises(offgraph.InvalidArgumentError, match=r"^max_new_tokens is -1, outside \[0, 2147483647\]$"):
        s.generate(PROMPT, max_new_tokens=-1)


def test_engine_defaults_are_the_c_apis():
    # One set: og_engine_options_init's (runtime/generation_limits.h), which the scheduler's are too.
    import inspect
    from offgraph import _offgraph
    params = inspect.signature(offgraph.Engine.__init__).parameters
    want = {"max_sequences": 4, "max_session_tokens": 1024, "step_tokens": 512}
    assert _offgraph.engine_defaults() == want
    assert {k: params[k].default for k in want} == want


def test_finish_reason_is_openais_for_sessions_and_the_engine(model):
    # One vocabulary: a session's max_new_tokens and the engine's length are both "length".
    g = model.session().generate(PROMPT, max_new_tokens=3)
    assert g.stop_reason == "max_new_tokens"  # the C API's promised name, kept
    assert g.finish_reason == "length"
    with model.engine() as e:
        r = e.generate([PROMPT], max_new_tokens=3)[0]
    assert r.stop_reason == r.finish_reason == "length"
