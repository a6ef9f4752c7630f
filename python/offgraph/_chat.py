"""Chat with tools and structured output over a Session (Session.chat, Session.chat_stream) and
OpenAI-shaped chat completions over a Model (Model.create_chat_completion), so that code written for
llama-cpp-python's Llama.create_chat_completion ports with small edits.

Requests are OpenAI's shapes (messages with tool_calls and tool results, tools, tool_choice,
response_format); the library renders them with the model's chat template, constrains the reply and
splits it into reasoning, content and tool calls as `offgraph serve`'s /v1/chat/completions does
(og_session_chat, offgraph.h).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import time
import uuid
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _offgraph
from ._errors import BusyError, Error, InvalidArgumentError


def _bad(field: str, message: str):
    return InvalidArgumentError(f"'{field}' {message}")


def _image_bytes(v: Any, field: str) -> bytes:
    # An image part's value: bytes as they are, or a data: URL's base64 payload (the bytes' magic
    # decides the format, as the library's own parser does: chat/content_part.h).
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, Mapping):
        field, v = field + ".url", v.get("url")
    if not isinstance(v, str):
        raise _bad(field, "must be a data: URL (data:image/png;base64,...) or bytes")
    low = v[:8].lower()
    if low.startswith("http://") or low.startswith("https://"):
        raise _bad(field, f"is '{v[:40]}': image URLs are not fetched; send a data: URL")
    head, sep, data = v.partition(",")
    if not low.startswith("data:") or not sep or not head.lower().endswith(";base64"):
        raise _bad(field, "must be a data: URL with base64 data (data:image/png;base64,...)")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(field, "is a data: URL whose base64 data is not valid") from None


def _content(c: Any, field: str, images: Optional[list] = None) -> Optional[str]:
    # A string, or OpenAI's list of parts: text parts are joined; image parts ({"type": "image_url",
    # "image_url": {"url": "data:..."}} or {"type": "image", "image": <data: URL or bytes>}) are
    # appended to `images` as (offset in the joined text, bytes); None = none.
    if c is None or isinstance(c, str):
        return c
    if isinstance(c, (list, tuple)):
        text = []
        for i, part in enumerate(c):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind in ("image_url", "image") and images is not None:
                images.append((len("".join(text).encode()), _image_bytes(part.get(kind), f"{field}[{i}].{kind}")))
                continue
            if kind != "text" or not isinstance(part.get("text"), str):
                raise _bad(f"{field}[{i}]", "must be a text part {'type': 'text', 'text': ...} or an image part "
                           "{'type': 'image_url', 'image_url': {'url': 'data:...'}}")
            text.append(part["text"])
        return "".join(text)
    raise _bad(field, f"must be a string or a list of parts, not {type(c).__name__}")


def _json_text(v: Any, field: str) -> str:
    # JSON as text: a string as given, a mapping or list dumped; None = "".
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v)
    except (TypeError, ValueError) as e:
        raise _bad(field, f"is not JSON-serialisable: {e}") from None


def _opt_str(m: Mapping, key: str, field: str) -> Optional[str]:
    v = m.get(key)
    if v is not None and not isinstance(v, str):
        raise _bad(field, f"must be a string, not {type(v).__name__}")
    return v


def _messages(messages: Sequence[Mapping], images: Optional[list] = None) -> list:
    # images: filled with (message index, byte offset in its content, bytes) of each image part.
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise _bad("messages", "must be a list of messages")
    out = []
    for i, m in enumerate(messages):
        at = f"messages[{i}]"
        if not isinstance(m, Mapping):
            raise _bad(at, f"must be a mapping with 'role' and 'content', not {type(m).__name__}")
        calls = []
        for j, c in enumerate(m.get("tool_calls") or []):
            fn = c.get("function") if isinstance(c, Mapping) else None
            if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                raise _bad(f"{at}.tool_calls[{j}].function.name", "is required")
            calls.append((str(c.get("id") or ""), fn["name"],
                          _json_text(fn.get("arguments"), f"{at}.tool_calls[{j}].function.arguments")))
        role = m.get("role")
        if not isinstance(role, str):
            raise _bad(f"{at}.role", "is required")
        found: list = []
        content = _content(m.get("content"), f"{at}.content", found)
        if images is not None:
            images.extend((i, offset, b) for offset, b in found)
        out.append((role, content,
                    _opt_str(m, "reasoning_content", f"{at}.reasoning_content"), _opt_str(m, "name", f"{at}.name"),
                    calls, _opt_str(m, "tool_call_id", f"{at}.tool_call_id")))
    return out


def _tools(tools: Optional[Sequence[Mapping]]) -> list:
    out = []
    for i, t in enumerate(tools or []):
        at = f"tools[{i}]"
        fn = t.get("function", t) if isinstance(t, Mapping) else None  # {"type", "function"} or the function itself
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise _bad(f"{at}.function.name", "is required")
        out.append((fn["name"], _opt_str(fn, "description", f"{at}.function.description"),
                    _json_text(fn.get("parameters"), f"{at}.function.parameters"), bool(fn.get("strict", False))))
    return out


def _tool_choice(tc: Union[str, Mapping, None]) -> Optional[str]:
    if tc is None or isinstance(tc, str):
        return tc
    if isinstance(tc, Mapping):
        fn = tc.get("function")
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            return fn["name"]
    raise _bad("tool_choice", "must be 'none', 'auto', 'required' or {'type': 'function', 'function': {'name': ...}}")


def _response_format(rf: Optional[Mapping]):
    # (kind, schema text, strict); llama-cpp-python's {"type": "json_object", "schema": ...} is a schema too.
    if rf is None:
        return None, None, False
    if not isinstance(rf, Mapping):
        raise _bad("response_format", "must be a mapping such as {'type': 'json_object'}")
    kind = rf.get("type")
    if kind == "json_schema":
        js = rf.get("json_schema")
        if not isinstance(js, Mapping):
            raise _bad("response_format.json_schema", "must be a mapping with a 'schema'")
        return kind, _json_text(js.get("schema", {}), "response_format.json_schema.schema"), bool(js.get("strict"))
    if kind == "json_object" and rf.get("schema") is not None:
        return "json_schema", _json_text(rf["schema"], "response_format.schema"), False
    return kind, None, False


def chat_request(messages, tools=None, tool_choice=None, response_format=None, grammar=None,
                 parallel_tool_calls=True, max_reasoning_tokens=None, chat_template_kwargs=None,
                 reasoning_effort=None) -> "_offgraph.ChatReq":
    kind, schema, strict = _response_format(response_format)
    if grammar is not None and not isinstance(grammar, str):
        raise _bad("grammar", "must be a GBNF grammar's text")
    kwargs = None if chat_template_kwargs is None else _json_text(chat_template_kwargs, "chat_template_kwargs")
    budget = -1 if max_reasoning_tokens is None else int(max_reasoning_tokens)
    if budget < 0 and max_reasoning_tokens is not None:
        raise _bad("max_reasoning_tokens", f"is {max_reasoning_tokens}: it must be 0 or more")
    images: list = []
    msgs = _messages(messages, images)
    return _offgraph.ChatReq(msgs, _tools(tools), _tool_choice(tool_choice), bool(parallel_tool_calls),
                             kind, schema, strict, grammar, budget, kwargs, reasoning_effort, images)


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


@dataclasses.dataclass
class ChatResult:
    """One chat turn's reply. `message` is the assistant message in OpenAI's shape (append it to the
    conversation): role, content (None when the reply is only tool calls), reasoning_content (when
    any) and tool_calls (when any: id, type, function name and arguments as JSON text)."""

    message: Dict[str, Any]
    finish_reason: str  # "stop", "length" (max_new_tokens or the cache ran out), "tool_calls"
    usage: Dict[str, int]  # prompt_tokens, completion_tokens, total_tokens, cached_tokens
    generation: Any  # the raw turn (a Generation: tokens, text with the markers, stop_reason, logprobs)

    @property
    def content(self) -> str:
        return self.message.get("content") or ""

    @property
    def reasoning_content(self) -> str:
        return self.message.get("reasoning_content", "")

    @property
    def tool_calls(self) -> List[Dict[str, Any]]:
        return self.message.get("tool_calls", [])


def _result(d: dict) -> ChatResult:
    from . import Generation  # the package's, imported here: it imports this module

    calls = [{"id": _text(i), "type": "function", "function": {"name": _text(n), "arguments": _text(a)}}
             for i, n, a in d["tool_calls"]]
    content = _text(d["content"])
    msg: Dict[str, Any] = {"role": "assistant", "content": None if calls and not content else content}
    reasoning = _text(d["reasoning_content"])
    if reasoning:
        msg["reasoning_content"] = reasoning
    if calls:
        msg["tool_calls"] = calls
    g = d["generation"]
    usage = {"prompt_tokens": d["prompt_tokens"], "completion_tokens": d["completion_tokens"],
             "total_tokens": d["prompt_tokens"] + d["completion_tokens"], "cached_tokens": d["cached_tokens"]}
    return ChatResult(msg, d["finish_reason"], usage,
                      Generation(_text(g["text"]), g["tokens"], g["stop_reason"], g["prompt_tokens"], g["logprobs"]))


class ChatStream:
    """Iterates over one chat turn's deltas, each a dict with any of reasoning_content, content and
    tool_calls (a call's first piece has index, id and function name; later pieces add arguments);
    `result` holds the ChatResult once it ends. KeyboardInterrupt cancels the turn (within one prefill
    chunk), keeping what was generated."""

    def __init__(self, session, req: "_offgraph.ChatReq", opts: "_offgraph.GenOpts"):
        self._session = session
        self.result: Optional[ChatResult] = None
        session._close_stream()
        session._s.chat_start(req, opts)
        session._stream = self

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return self

    def __next__(self) -> Dict[str, Any]:
        while self.result is None:
            try:
                reasoning, content, calls, done = self._session._s.chat_next()
            except KeyboardInterrupt:
                self.cancel()
                raise
            except BusyError:
                raise
            except Error:
                self._session._stream = None
                self.result = ChatResult({"role": "assistant", "content": ""}, "stop", {}, None)
                raise
            delta: Dict[str, Any] = {}
            if reasoning:
                delta["reasoning_content"] = _text(reasoning)
            if content:
                delta["content"] = _text(content)
            if calls:
                delta["tool_calls"] = [
                    dict({"index": i, "function": {"arguments": _text(a)}},
                         **({"id": _text(c), "type": "function"} if c else {}))
                    for i, c, n, a in calls]
                for piece, (_, _, n, _) in zip(delta["tool_calls"], calls):
                    if n:
                        piece["function"]["name"] = _text(n)
            if done:
                self._finish()
            if delta:
                return delta
        raise StopIteration

    def cancel(self) -> None:
        """Ends the turn now, keeping what was generated."""
        if self.result is None:
            try:
                self._session._s.stream_cancel()
            finally:
                self._finish()

    close = cancel

    def _finish(self) -> None:
        if self.result is not None:
            return
        self._session._stream = None
        self.result = _result(self._session._s.chat_finish())


def session_chat(session, gen_opts, request, stream: bool) -> Union[ChatResult, ChatStream]:
    s = ChatStream(session, request, gen_opts)
    if stream:
        return s
    try:
        for _ in s:
            pass
    except KeyboardInterrupt:
        s.cancel()
        raise
    assert s.result is not None
    return s.result


def create_chat_completion(model, messages: Sequence[Mapping], tools: Optional[Sequence[Mapping]] = None,
                           tool_choice: Union[str, Mapping, None] = None,
                           response_format: Optional[Mapping] = None, grammar: Optional[str] = None,
                           temperature: float = 0.2, top_p: float = 0.95, top_k: int = 40, min_p: float = 0.05,
                           stream: bool = False, stop: Union[str, List[str], None] = None,
                           seed: Optional[int] = None, max_tokens: Optional[int] = None,
                           presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                           repeat_penalty: float = 1.0, parallel_tool_calls: bool = True,
                           max_reasoning_tokens: Optional[int] = None,
                           chat_template_kwargs: Optional[Mapping] = None, reasoning_effort: Optional[str] = None,
                           model_name: Optional[str] = None) -> Union[Dict, Iterator[Dict]]:
    req = chat_request(messages, tools, tool_choice, response_format, grammar, parallel_tool_calls,
                       max_reasoning_tokens, chat_template_kwargs, reasoning_effort)
    session = model.session()
    n_new = max_tokens if max_tokens is not None and max_tokens > 0 else session.capacity
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    from . import _gen_opts

    opts = _gen_opts("create_chat_completion", n_new, temperature,
                     dict(top_k=top_k, top_p=top_p, min_p=min_p, repeat_penalty=repeat_penalty,
                          presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
                          seed=-1 if seed is None else int(seed), stop=stops))
    head = {"id": "chatcmpl-" + uuid.uuid4().hex, "created": int(time.time()), "model": model_name or model.path}
    if stream:
        return _stream(session, req, opts, head)
    try:
        r = session_chat(session, opts, req, stream=False)
    finally:
        session.close()
    usage = {k: r.usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return dict(head, object="chat.completion",
                choices=[{"index": 0, "message": r.message, "logprobs": None, "finish_reason": r.finish_reason}],
                usage=usage)


def _stream(session, req, opts, head) -> Iterator[Dict]:
    # OpenAI's chunks: the role first, then one chunk per delta, then the finish reason.
    def chunk(delta, finish=None):
        return dict(head, object="chat.completion.chunk",
                    choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    try:
        yield chunk({"role": "assistant", "content": ""})
        s = session_chat(session, opts, req, stream=True)
        for delta in s:
            yield chunk(delta)
        yield chunk({}, s.result.finish_reason)
    finally:
        session.close()
