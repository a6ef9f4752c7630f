"""OpenAI-shaped completions over a Model (Model.create_completion), so that code written for
llama-cpp-python's Llama.create_completion ports with small edits: the same argument names and
defaults, the same dict (or stream of chunk dicts) in OpenAI's text_completion shape."""

from __future__ import annotations

import time
import uuid
from typing import Dict, Iterator, List, Optional, Sequence, Union

from . import _offgraph
from ._errors import InvalidArgumentError

_FINISH = {"stop_token": "stop", "stop_string": "stop", "cancelled": "stop", "max_new_tokens": "length",
           "capacity": "length"}


def _logprobs_block(model, context: List[int], lps: List[dict], offset: int) -> dict:
    # OpenAI's legacy completions logprobs: per token its text, logprob, top alternatives (text ->
    # logprob) and the offset of its text in the returned text. A token's text is what it adds to
    # the text before it (a lone SentencePiece piece would lose its leading space).
    tok = model.tokenizer

    def added(before: List[int], token: int) -> str:
        return tok.decode(before + [token])[len(tok.decode(before)):]

    ids = list(context)
    tokens, token_logprobs, top, offsets = [], [], [], []
    for lp in lps:
        piece = added(ids, lp["token"])
        offsets.append(offset)
        offset += len(piece)
        tokens.append(piece)
        token_logprobs.append(lp["logprob"])
        top.append({added(ids, i): v for i, v in lp["top_logprobs"]})
        ids.append(lp["token"])
    return {"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top, "text_offset": offsets}


def create_completion(model, prompt: Union[str, Sequence[int]], suffix: Optional[str] = None,
                      max_tokens: Optional[int] = 16, temperature: float = 0.8, top_p: float = 0.95,
                      min_p: float = 0.05, echo: bool = False, stop: Union[str, List[str], None] = None,
                      frequency_penalty: float = 0.0, presence_penalty: float = 0.0, repeat_penalty: float = 1.0,
                      top_k: int = 40, stream: bool = False, seed: Optional[int] = None,
                      logprobs: Optional[int] = None, model_name: Optional[str] = None,
                      ) -> Union[Dict, Iterator[Dict]]:
    if suffix is not None:
        raise TypeError("create_completion(): suffix (fill-in-the-middle) is not supported")
    top = _offgraph.completion_logprobs_max  # the server's bound (runtime/generation_limits.h), in its words
    if logprobs is not None and not 0 <= int(logprobs) <= top:
        raise InvalidArgumentError(f"create_completion(): logprobs is {int(logprobs)}, outside [0, {top}]")
    session = model.session()
    ids = model.tokenizer.encode(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
    prompt_text = prompt if isinstance(prompt, str) else model.tokenizer.decode(ids)
    n_new = max_tokens if max_tokens is not None and max_tokens > 0 else max(1, session.capacity - len(ids))
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    opts = dict(top_k=top_k, top_p=top_p, min_p=min_p, repeat_penalty=repeat_penalty,
                presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
                seed=-1 if seed is None else int(seed), stop=stops)
    if logprobs is not None:
        opts.update(logprobs=True, top_logprobs=int(logprobs))
    head = {"id": "cmpl-" + uuid.uuid4().hex, "object": "text_completion", "created": int(time.time()),
            "model": model_name or model.path}
    if stream:
        return _stream(model, session, ids, prompt_text if echo else "", n_new, temperature, opts, head)
    try:
        g = session.generate(ids, max_new_tokens=n_new, temperature=temperature, **opts)
    finally:
        session.close()
    text = (prompt_text if echo else "") + g.text
    choice = {"text": text, "index": 0,
              "logprobs": (_logprobs_block(model, ids, g.logprobs, len(prompt_text) if echo else 0)
                           if g.logprobs is not None else None),
              "finish_reason": _FINISH.get(g.stop_reason, "stop")}
    usage = {"prompt_tokens": len(ids), "completion_tokens": len(g.tokens), "total_tokens": len(ids) + len(g.tokens)}
    return dict(head, choices=[choice], usage=usage)


def _stream(model, session, ids, echo_text, n_new, temperature, opts, head) -> Iterator[Dict]:
    # One chunk per text piece (finish_reason None), then a last chunk with the finish reason.
    def chunk(text, finish, lps=None):
        return dict(head, choices=[{"text": text, "index": 0, "logprobs": lps, "finish_reason": finish}])

    try:
        if echo_text:
            yield chunk(echo_text, None)
        st = session.stream(ids, max_new_tokens=n_new, temperature=temperature, **opts)
        for piece in st:
            yield chunk(piece, None)
        g = st.result
        lps = _logprobs_block(model, ids, g.logprobs, len(echo_text)) if g.logprobs is not None else None
        yield chunk("", _FINISH.get(g.stop_reason, "stop"), lps)
    finally:
        session.close()
