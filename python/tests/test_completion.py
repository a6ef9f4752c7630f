"""Model.create_completion (and Model(...)(prompt)): llama-cpp-python's call shape and OpenAI's
text_completion dict, streamed or not, with echo, stop, seed and logprobs."""
import pytest

import offgraph
from conftest import CONTINUATION, PROMPT


def test_completion_dict_in_openai_shape(model):
    r = model.create_completion(PROMPT, max_tokens=60, temperature=0)
    assert r["object"] == "text_completion" and r["id"].startswith("cmpl-")
    assert isinstance(r["created"], int) and r["model"] == model.path
    (c,) = r["choices"]
    assert c["text"] == CONTINUATION and c["index"] == 0 and c["logprobs"] is None
    assert c["finish_reason"] == "length"
    assert r["usage"] == {"prompt_tokens": 5, "completion_tokens": 60, "total_tokens": 65}
    # As llama-cpp-python: the model is callable; echo, stop strings, a finish by stop.
    r = model(PROMPT, max_tokens=60, temperature=0, echo=True, stop=["Lily"])
    assert r["choices"][0]["text"] == PROMPT + ", there was a little girl named "
    assert r["choices"][0]["finish_reason"] == "stop"


def test_completion_stream_seed_and_logprobs(model):
    chunks = list(model.create_completion(PROMPT, max_tokens=60, temperature=0, stream=True))
    assert "".join(ch["choices"][0]["text"] for ch in chunks) == CONTINUATION
    assert [ch["choices"][0]["finish_reason"] for ch in chunks][-2:] == [None, "length"]
    assert len({ch["id"] for ch in chunks}) == 1
    a = model.create_completion(PROMPT, max_tokens=20, seed=7)["choices"][0]["text"]
    b = model.create_completion(PROMPT, max_tokens=20, seed=7)["choices"][0]["text"]
    assert a == b
    r = model.create_completion(PROMPT, max_tokens=5, temperature=0, logprobs=2)
    lp = r["choices"][0]["logprobs"]
    assert "".join(lp["tokens"]) == r["choices"][0]["text"]
    assert len(lp["token_logprobs"]) == 5 and all(x <= 0 for x in lp["token_logprobs"])
    assert all(len(t) <= 2 for t in lp["top_logprobs"]) and lp["text_offset"][0] == 0
    with pytest.raises(TypeError, match="suffix"):
        model.create_completion(PROMPT, suffix="x")
    # The server's completions bound [0, 5] (runtime/generation_limits.h), in its words.
    for bad in (6, 21, -1):
        with pytest.raises(offgraph.InvalidArgumentError, match=rf"logprobs is {bad}, outside \[0, 5\]"):
            model.create_completion(PROMPT, logprobs=bad)
