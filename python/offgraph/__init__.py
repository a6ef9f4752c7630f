"""offgraph: an LLM runtime whose KV cache lives off the model graph.

The Python module over the C library (liboffgraph.so)::

    import offgraph
    model = offgraph.Model("stories260K.gguf")
    session = model.session(kv_dtype="f32")
    print(session.generate("Once upon a time", max_new_tokens=60).text)
    for piece in session.stream(" The end.", max_new_tokens=20):
        print(piece, end="", flush=True)

Compute runs with the GIL released. Ctrl-C (KeyboardInterrupt) during
generate(), a stream or an engine request cancels that generation cleanly
(what was generated is kept, stop reason "cancelled") and is then re-raised.
A Session is used by one thread at a time (another thread gets BusyError);
a Model and an Engine may be used from any thread.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _offgraph
from ._errors import (BusyError, CancelledError, CapacityError, ClosedError, Error, InvalidArgumentError,
                      NotFoundError, OutOfRangeError, StateError)

__all__ = [
    "Model", "Tokenizer", "ChatTemplate", "Session", "Stream", "Generation", "Engine", "Request", "ChatResult",
    "ChatStream",
    "Error", "InvalidArgumentError", "NotFoundError", "ClosedError", "OutOfRangeError", "BusyError", "StateError",
    "CapacityError", "CancelledError", "__version__", "get_limits", "set_limits",
]

__version__: str = _offgraph.version()


def get_limits() -> dict:
    """The process's bounds on untrusted chat templates and JSON schemas (og_limits, serve's
    --template-max-* and --schema-max-*): template_max_work, template_max_ms, template_max_value_bytes,
    template_max_memory_bytes, schema_max_properties, schema_max_branches, schema_max_enum_values,
    schema_max_work."""
    return _offgraph.get_limits()


def set_limits(**limits: int) -> dict:
    """Sets the named bounds of get_limits() for the whole process (the others are kept) and returns them
    all. A bad value or unknown name is InvalidArgumentError naming it, and nothing changes. Meant for
    start-up: renders running in other threads are not synchronised with the change."""
    for k, v in limits.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"set_limits(): {k} must be an int, not {type(v).__name__}")
    _offgraph.set_limits(limits)
    return _offgraph.get_limits()


Prompt = Union[str, Sequence[int], None]
Message = Union[Mapping[str, str], Tuple[str, str]]


def _text(b: bytes) -> str:
    # Pieces never split a UTF-8 character, but byte-fallback tokens may spell invalid UTF-8.
    return b.decode("utf-8", errors="replace")


@dataclasses.dataclass
class Generation:
    """The result of one generation."""

    text: str
    tokens: List[int]
    stop_reason: str  # "stop_token", "stop_string", "max_new_tokens", "capacity", "cancelled" (engine: "stop", "length", ...)
    prompt_tokens: int = 0
    # With logprobs=True (sessions): per generated token {"token": id, "logprob": float,
    # "top_logprobs": [(id, logprob), ...]} (the natural log of the softmax of the raw logits, as the
    # server's; top_logprobs alternatives most likely first). None otherwise.
    logprobs: Optional[List[dict]] = None

    @property
    def finish_reason(self) -> str:
        """Why it ended in OpenAI's words, whichever call made it: "stop" (a stop id or string),
        "length" (max_new_tokens or the cache's capacity), "cancelled" (or the engine's "refused",
        "failed"). stop_reason keeps a session's finer names (the C API's og_stop_reason_name)."""
        return _FINISH_REASON.get(self.stop_reason, self.stop_reason)


# A session's stop reasons (og_stop_reason_name) in OpenAI's finish-reason vocabulary, the one
# the engine, the server and the commands use (docs/library.md, "Bounds, defaults and stop reasons").
_FINISH_REASON = {"stop_token": "stop", "stop_string": "stop", "max_new_tokens": "length", "capacity": "length"}


_SAMPLING_DEFAULTS = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0, "repeat_last_n": 64,
                      "presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": -1, "stop": None,
                      "stop_at_eos": True, "logprobs": False, "top_logprobs": 0}


def _gen_opts(caller: str, max_new_tokens: int, temperature: float, sampling: Mapping) -> "_offgraph.GenOpts":
    # An unknown keyword is the caller's TypeError, named as Python names it for the public method.
    for key in sampling:
        if key not in _SAMPLING_DEFAULTS:
            raise TypeError(f"{caller}() got an unexpected keyword argument '{key}' "
                            f"(sampling options: {', '.join(_SAMPLING_DEFAULTS)})")
    o = dict(_SAMPLING_DEFAULTS, **sampling)
    return _offgraph.GenOpts(int(max_new_tokens), float(temperature), int(o["top_k"]), float(o["top_p"]),
                             float(o["min_p"]), float(o["repeat_penalty"]), int(o["repeat_last_n"]),
                             float(o["presence_penalty"]), float(o["frequency_penalty"]), int(o["seed"]),
                             list(o["stop"] or []), bool(o["stop_at_eos"]),
                             bool(o["logprobs"]) or int(o["top_logprobs"]) > 0, int(o["top_logprobs"]))


def _existing(path: Optional[str]) -> str:
    # A missing file is a FileNotFoundError (offgraph.NotFoundError), as open() would raise.
    if path and not os.path.exists(path):
        raise NotFoundError(str(path))
    return str(path or "")


def _messages(messages: Iterable[Message]) -> List[Tuple[str, str]]:
    out = []
    for m in messages:
        if isinstance(m, Mapping):
            out.append((str(m["role"]), str(m["content"])))
        else:
            role, content = m
            out.append((str(role), str(content)))
    return out


class Tokenizer:
    """The model's tokenizer: text <-> token ids."""

    def __init__(self, model: "Model"):
        self._m = model._m

    def encode(self, text: str, add_special: bool = True, parse_special: bool = False) -> List[int]:
        """Token ids of `text`; add_special adds BOS/EOS as the vocabulary says; parse_special lets
        special-token texts inside `text` become special tokens."""
        return self._m.encode(text, add_special, parse_special)

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        """The text the ids spell (invalid UTF-8 replaced); skip_special drops control tokens."""
        return _text(self._m.decode(list(ids), skip_special))

    def decode_bytes(self, ids: Sequence[int], skip_special: bool = True) -> bytes:
        """The raw bytes the ids spell."""
        return self._m.decode(list(ids), skip_special)

    def piece(self, token: int) -> str:
        """The vocabulary entry of `token` as stored."""
        return _text(self._m.piece(token))

    @property
    def n_vocab(self) -> int:
        return self._m.info()["n_vocab"]

    @property
    def special_ids(self) -> dict:
        """{"bos", "eos", "eot", "pad", "unk"} (-1 = none) and "add_bos"."""
        return self._m.special()

    @property
    def bos(self) -> int:
        return self._m.special()["bos"]

    @property
    def eos(self) -> int:
        return self._m.special()["eos"]

    @property
    def stop_ids(self) -> List[int]:
        """Every id that ends an assistant turn."""
        return self._m.stop_ids()


class ChatTemplate:
    """The chat template the model was opened with."""

    def __init__(self, model: "Model"):
        self._m = model._m

    @property
    def name(self) -> str:
        return self._m.info()["chat_template"]

    def render(self, messages: Iterable[Message], add_generation_prompt: bool = True) -> str:
        """The conversation as text; messages are {"role", "content"} dicts or (role, content) pairs."""
        return _text(self._m.render_chat(_messages(messages), add_generation_prompt))

    def encode(self, messages: Iterable[Message], add_generation_prompt: bool = True) -> List[int]:
        """The ids a new session prefills for the conversation (contents cannot inject special tokens)."""
        return self._m.encode_chat(_messages(messages), add_generation_prompt)


class Model:
    """A loaded model (.gguf file or HF checkpoint directory).

    Args:
        path: the model.
        tokenizer: a tokenizer file or directory instead of the model's own.
        chat_template: "auto" (the model's), a built-in name ("llama3", "chatml", ...) or "0" (raw text).
        mmap: keep the weights in the mapped file.
        threads: forward-pass workers (process-wide); 0 = all cores.
        experts_in_memory: copy a mixture of experts' expert matrices into memory too (faster when
            the file fits); by default they stay in the mapped file and only the routed ones are read.
        mmproj: a vision tower in llama.cpp's mmproj GGUF (as ``--mmproj``), for images in
            ``Session.chat`` (an HF directory's own tower loads without it).
        no_mmproj: load no vision tower, not even an HF directory's own (as ``--no-mmproj``);
            images are then refused as by a text-only model. Contradicts ``mmproj``.
    """

    def __init__(self, path: str, *, tokenizer: Optional[str] = None, chat_template: str = "auto",
                 mmap: bool = False, threads: int = 0, experts_in_memory: bool = False,
                 mmproj: Optional[str] = None, no_mmproj: bool = False):
        self.path = str(path)
        self._m = _offgraph.Model(_existing(str(path)), _existing(tokenizer), chat_template, mmap, threads,
                                  experts_in_memory, _existing(mmproj), no_mmproj)
        self.tokenizer = Tokenizer(self)
        self.chat_template = ChatTemplate(self)

    @property
    def info(self) -> dict:
        """architecture, chat_template, tokenizer_kind, n_vocab, n_ctx, d_model, n_layers, n_heads,
        n_kv_heads, head_dim, d_ff, n_kv_caches, weights_copied_bytes (matrices copied into memory at load),
        weights_mapped_expert_bytes (expert matrices used in place from the mapped file), generates
        (sessions and engines run it; False for an embedding-only, bidirectional model), embeds (embed()
        works), embedding_dim (its vectors' width, 0 when it does not embed), pooling ("mean", "cls",
        "last", "none", or "" when the file declares none)."""
        return self._m.info()

    def embed(self, input: Union[str, Sequence[str]], *, dimensions: int = 0,
              normalize: int = 2) -> Union[List[float], List[List[float]]]:
        """The embedding of a text (a list of floats), or of each text of a list (a list of such lists),
        with the model's pooling: the vectors POST /v1/embeddings and `offgraph embed` give, bit for bit.
        Texts are encoded with the vocabulary's BOS/EOS. dimensions: keep the first N values (0 = the full
        width), then normalise; normalize: 2 euclidean (unit vectors), -1 none, 0 max-abs (int16 range),
        1 taxicab, p > 2 p-norm. A model that does not embed (info["embeds"] False), an empty text or one
        longer than the model's context raise InvalidArgumentError."""
        single = isinstance(input, str)
        texts = [input] if single else [str(t) for t in input]
        vectors = self._m.embed(texts, int(normalize), int(dimensions))
        return vectors[0] if single else vectors

    def create_completion(self, prompt: Union[str, Sequence[int]], suffix: Optional[str] = None,
                          max_tokens: Optional[int] = 16, temperature: float = 0.8, top_p: float = 0.95,
                          min_p: float = 0.05, echo: bool = False, stop: Union[str, List[str], None] = None,
                          frequency_penalty: float = 0.0, presence_penalty: float = 0.0,
                          repeat_penalty: float = 1.0, top_k: int = 40, stream: bool = False,
                          seed: Optional[int] = None, logprobs: Optional[int] = None,
                          model: Optional[str] = None):
        """An OpenAI-shaped text completion, as llama-cpp-python's Llama.create_completion: the same
        argument names and defaults (temperature 0.8, top_p 0.95, min_p 0.05, top_k 40, max_tokens 16;
        max_tokens None or <= 0: up to the session's capacity), over a fresh session each call. Returns
        {"id", "object": "text_completion", "created", "model", "choices": [{"text", "index",
        "logprobs", "finish_reason": "stop" | "length"}], "usage": {"prompt_tokens",
        "completion_tokens", "total_tokens"}}; with stream=True an iterator of such chunks (one per
        text piece, the last with the finish_reason and no usage). logprobs=N (0..5, the server's
        /v1/completions bound) gives OpenAI's legacy block (tokens, token_logprobs, top_logprobs as
        {text: logprob}, text_offset). echo
        puts the prompt before the text; seed None is random. suffix (fill-in-the-middle) raises
        TypeError. `model` names the model in the reply (default: the path)."""
        from ._openai import create_completion
        return create_completion(self, prompt, suffix, max_tokens, temperature, top_p, min_p, echo, stop,
                                 frequency_penalty, presence_penalty, repeat_penalty, top_k, stream, seed, logprobs,
                                 model)

    __call__ = create_completion

    def create_chat_completion(self, messages: Sequence[Mapping], tools: Optional[Sequence[Mapping]] = None,
                               tool_choice: Union[str, Mapping, None] = None,
                               response_format: Optional[Mapping] = None, grammar: Optional[str] = None,
                               temperature: float = 0.2, top_p: float = 0.95, top_k: int = 40,
                               min_p: float = 0.05, stream: bool = False, stop: Union[str, List[str], None] = None,
                               seed: Optional[int] = None, max_tokens: Optional[int] = None,
                               presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                               repeat_penalty: float = 1.0, parallel_tool_calls: bool = True,
                               max_reasoning_tokens: Optional[int] = None,
                               chat_template_kwargs: Optional[Mapping] = None,
                               reasoning_effort: Optional[str] = None, model: Optional[str] = None):
        """An OpenAI-shaped chat completion, as llama-cpp-python's Llama.create_chat_completion (the
        same argument names and defaults: temperature 0.2, top_p 0.95, min_p 0.05, top_k 40; max_tokens
        None: up to the session's capacity), over a fresh session each call, giving the reply
        `offgraph serve`'s /v1/chat/completions gives. messages, tools, tool_choice and response_format
        ({"type": "json_object"}, {"type": "json_schema", "json_schema": {"schema": ...}}) are
        OpenAI's; grammar is GBNF text. Returns {"id", "object": "chat.completion", "created", "model",
        "choices": [{"index", "message": {"role", "content", "reasoning_content"?, "tool_calls"?},
        "finish_reason": "stop" | "length" | "tool_calls"}], "usage"}; with stream=True an iterator of
        "chat.completion.chunk" dicts (the role, then deltas of reasoning_content, content and
        tool_calls, then the finish_reason). A bad request raises InvalidArgumentError naming the
        field ('messages[0].role', 'tool_choice', 'response_format.json_schema.schema', ...)."""
        from ._chat import create_chat_completion
        return create_chat_completion(self, messages, tools, tool_choice, response_format, grammar, temperature,
                                      top_p, top_k, min_p, stream, stop, seed, max_tokens, presence_penalty,
                                      frequency_penalty, repeat_penalty, parallel_tool_calls, max_reasoning_tokens,
                                      chat_template_kwargs, reasoning_effort, model)

    def session(self, *, kv_windows: Optional[Sequence[int]] = None, kv_dtype: str = "f16",
                kv_kind: str = "sequence", kv_max_capacity: int = 0, kv_initial_capacity: int = 512,
                prefill_chunk_size: int = 0, **spec) -> "Session":
        """A new conversation over its own KV cache of this policy, speculating as `spec` says (see Session)."""
        return Session(self, **spec, kv_windows=kv_windows, kv_dtype=kv_dtype, kv_kind=kv_kind,
                       kv_max_capacity=kv_max_capacity, kv_initial_capacity=kv_initial_capacity,
                       prefill_chunk_size=prefill_chunk_size)

    def engine(self, **options) -> "Engine":
        """An Engine over this model (see Engine for the options)."""
        return Engine(self, **options)

    def close(self) -> None:
        """Closes the model; sessions and engines made from it keep working on token ids
        (text prompts need the model's tokenizer and raise ClosedError)."""
        self._m.close()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Stream:
    """Iterates over the text pieces of one generation; `result` holds the Generation once it ends.

    Breaking out of the loop early leaves the turn running until close() (or the
    next call on the session, which closes it); KeyboardInterrupt cancels it.
    """

    def __init__(self, session: "Session", prompt: List[int], opts: "_offgraph.GenOpts"):
        self._session = session
        self.tokens: List[int] = []
        self.result: Optional[Generation] = None
        session._s.stream_start(prompt, opts)
        session._stream = self

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while self.result is None:
            try:
                token, text, done = self._session._s.stream_next()
            except KeyboardInterrupt:
                self.cancel()
                raise
            except BusyError:
                raise  # another thread holds the session: the stream itself is untouched
            except Error:
                # The library ended the turn and took it back; the session is free again,
                # and the caller sees this error, not a later "no stream is running".
                self._abandon()
                raise
            if token >= 0:
                self.tokens.append(token)
            if done:
                self._finish()
            if text:
                return _text(text)
        raise StopIteration

    def cancel(self) -> None:
        """Ends the generation now, keeping what was generated (stop reason "cancelled")."""
        if self.result is None:
            try:
                self._session._s.stream_cancel()
            finally:
                self._finish()

    close = cancel

    def _finish(self) -> None:
        if self.result is not None:
            return
        try:
            d = self._session._s.stream_finish()
        except Error:
            self._abandon()
            raise
        self._session._stream = None
        self.result = Generation(_text(d["text"]), d["tokens"], d["stop_reason"], d["prompt_tokens"], d["logprobs"])

    def _abandon(self) -> None:
        # The turn failed: nothing of it is kept (the library undid it), and the
        # stream is over, so cancel() and the session's other calls work again.
        self._session._stream = None
        self.result = Generation("", [], "failed", 0)


def _spec_kind(spec: Optional[str], draft_model: Optional["Model"]) -> Optional[str]:
    """Session's and Engine's spec argument checked: None / "none", "ngram" or "draft" (implied by draft_model)."""
    if spec is None and draft_model is not None:
        spec = "draft"
    if spec not in (None, "none", "ngram", "draft"):
        raise ValueError(f"spec={spec!r}: one of 'ngram' (prompt lookup), 'draft' (a draft model) or None")
    if spec == "draft" and not isinstance(draft_model, Model):
        raise ValueError("spec='draft' needs draft_model=Model(...) with this model's vocabulary")
    if spec != "draft" and draft_model is not None:
        raise ValueError(f"draft_model is for spec='draft', not spec={spec!r}")
    return spec


class Session:
    """One conversation over its own KV cache. Use it from one thread at a time.

    Args (the cache policy): kv_windows (a window per cache, repeated; 0 = full
    attention), kv_dtype ("f16", "f32", "bf16", "q8_0"), kv_kind ("sequence" or
    "reference"), kv_max_capacity (positions; 0 = min(model context, 4096)),
    kv_initial_capacity, prefill_chunk_size (0 = the model's, else 512).
    Speculative decoding in every turn, as Engine's (greedy text unchanged; docs/speculative.md):
    spec="ngram" (spec_ngram_size, spec_ngram_min) or spec="draft" with draft_model, draft_max, draft_min,
    draft_p_min; spec_stats() gives the acceptance counters.
    """

    def __init__(self, model: Model, *, kv_windows: Optional[Sequence[int]] = None, kv_dtype: str = "f16",
                 kv_kind: str = "sequence", kv_max_capacity: int = 0, kv_initial_capacity: int = 512,
                 prefill_chunk_size: int = 0, spec: Optional[str] = None, spec_ngram_size: int = 3,
                 spec_ngram_min: int = 1, draft_max: int = 4, draft_min: int = 0,
                 draft_model: Optional[Model] = None, draft_p_min: float = 0.75, _handle=None):
        self.model = model
        self._stream: Optional[Stream] = None
        if _handle is not None:
            self._s = _handle
        else:
            spec = _spec_kind(spec, draft_model)
            self._s = _offgraph.Session(model._m, kv_kind, kv_dtype, int(kv_max_capacity), int(kv_initial_capacity),
                                        [int(w) for w in (kv_windows or [])], int(prefill_chunk_size),
                                        spec_ngram_size if spec == "ngram" else 0, spec_ngram_min, draft_max,
                                        draft_min, draft_model._m if spec == "draft" else None, float(draft_p_min))

    def _ids(self, prompt: Prompt) -> List[int]:
        self._close_stream()
        if prompt is None:
            return []
        if isinstance(prompt, str):
            # A conversation's first text gets BOS as the vocabulary wants; later text continues it.
            return self.model._m.encode(prompt, self._s.position() == 0, False)
        return [int(t) for t in prompt]

    def _close_stream(self) -> None:
        if self._stream is not None:
            self._stream.cancel()

    def prefill(self, prompt: Prompt, logits: bool = False) -> None:
        """Adds `prompt` (text or ids) to the history without generating; logits=True keeps the
        last row's logits for logits(). Ctrl-C stops it within one prefill chunk, takes it back whole
        (the history is as before) and raises KeyboardInterrupt."""
        self._s.prefill(self._ids(prompt), logits)

    def generate(self, prompt: Prompt = None, max_new_tokens: int = 256, temperature: float = 0.0, **sampling) -> Generation:
        """One turn: prefills `prompt` (text, ids, or None to continue the history) and samples until a
        stop rule. Sampling: top_k, top_p, min_p, repeat_penalty, repeat_last_n, presence_penalty,
        frequency_penalty, seed (-1 = random), stop (strings), stop_at_eos; logprobs=True fills
        Generation.logprobs, top_logprobs=N (0..20) adds N alternatives per token. Ctrl-C cancels it, during
        the prompt's prefill too (within one prefill chunk)."""
        s = Stream(self, self._ids(prompt), _gen_opts("generate", max_new_tokens, temperature, sampling))
        try:
            for _ in s:
                pass
        except KeyboardInterrupt:
            s.cancel()
            raise
        assert s.result is not None
        return s.result

    def stream(self, prompt: Prompt = None, max_new_tokens: int = 256, temperature: float = 0.0, **sampling) -> Stream:
        """As generate(), as an iterator over the text pieces (Stream.result: the Generation)."""
        return Stream(self, self._ids(prompt), _gen_opts("stream", max_new_tokens, temperature, sampling))

    def chat(self, messages: Sequence[Mapping], tools: Optional[Sequence[Mapping]] = None,
             tool_choice: Union[str, Mapping, None] = None, response_format: Optional[Mapping] = None,
             grammar: Optional[str] = None, *, parallel_tool_calls: bool = True,
             max_reasoning_tokens: Optional[int] = None, chat_template_kwargs: Optional[Mapping] = None,
             reasoning_effort: Optional[str] = None, max_new_tokens: int = 256, temperature: float = 0.0,
             stream: bool = False, **sampling):
        """One chat turn, as `offgraph serve`'s /v1/chat/completions answers it: the whole conversation
        (OpenAI's messages: tool_calls on assistant messages, "tool" results with tool_call_id,
        reasoning_content; a user message's content may hold image parts, {"type": "image_url",
        "image_url": {"url": "data:image/png;base64,..."}} or {"type": "image", "image": <bytes or a
        data: URL>}, for a model with a vision tower: Model(mmproj=...) or an HF directory's own;
        http(s) URLs are not fetched) rendered with the model's template; the reply constrained by tool_choice
        ("auto", "none", "required" or {"type": "function", "function": {"name": ...}}),
        response_format or grammar (GBNF), after the reasoning a reasoning model writes first
        (max_reasoning_tokens: its budget, default 1024); parallel_tool_calls=False keeps one call.
        The history this session shares with the new render is kept, so a conversation's next turn
        prefills only what it adds. Sampling as generate(). Returns a ChatResult (message to append
        to the conversation, finish_reason "stop" | "length" | "tool_calls", usage, the raw
        generation); stream=True returns a ChatStream of delta dicts. A bad request raises
        InvalidArgumentError naming the field."""
        from ._chat import chat_request, session_chat
        req = chat_request(messages, tools, tool_choice, response_format, grammar, parallel_tool_calls,
                           max_reasoning_tokens, chat_template_kwargs, reasoning_effort)
        return session_chat(self, _gen_opts("chat", max_new_tokens, temperature, sampling), req, stream)

    def logits(self, copy: bool = False):
        """numpy float32 [n_vocab]: the logits of the last row that asked for them (the distribution the
        last token was sampled from, or prefill(..., logits=True)). Without copy, a read-only view of
        the session's buffer, whose values the next logits() call refreshes. Needs numpy (Debian's
        python3-numpy); the rest of the module does not."""
        a = self._s.logits()
        return a.copy() if copy else a

    @property
    def position(self) -> int:
        """Tokens in the history."""
        return self._s.position()

    @property
    def history(self) -> List[int]:
        return self._s.history()

    @property
    def capacity(self) -> int:
        return self._s.capacity()

    def rewind(self, length: int) -> None:
        """Truncates the history (and the cache) to `length` tokens."""
        self._close_stream()
        self._s.rewind(length)

    def undo(self) -> None:
        """Takes back the last generate() / prefill()."""
        self._close_stream()
        self._s.undo()

    def reset(self) -> None:
        """Empty history, cache cleared."""
        self._close_stream()
        self._s.reset()

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the session's state to `path` (history and its images, cache contents, undo marks, last
        logits, with the model's and the vision tower's fingerprints; versioned and checksummed). Sampling keeps no state between turns, so
        a seeded turn after load() gives what it would have given here."""
        self._close_stream()
        self._s.save(os.fspath(path))

    def load(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Replaces the state with the one save() wrote: the session then continues exactly as the saved
        one would. A missing file is NotFoundError; a foreign, truncated or corrupt file, one saved from
        another model, with another kv_dtype or with images beside another (or no) vision tower is
        InvalidArgumentError (the session unchanged)."""
        self._close_stream()
        self._s.load(_existing(os.fspath(path)))

    def fork(self) -> "Session":
        """A new session with the same history and logits (recomputed into its own cache)."""
        self._close_stream()
        return Session(self.model, _handle=self._s.fork())

    def stats(self) -> dict:
        return self._s.stats()

    def spec_stats(self) -> dict:
        """Speculation's counters since the session was made or forked, as Engine.spec_stats (pauses stays 0)."""
        return self._s.spec_stats()

    def close(self) -> None:
        self._close_stream()
        self._s.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Request:
    """One request of an Engine: iterate for its text pieces; result() reads it to the end."""

    def __init__(self, engine: "Engine", request_id: int):
        self._engine = engine
        self.id = request_id
        self.tokens: List[int] = []
        self._text: List[str] = []
        self.finish: Optional[dict] = None  # finish_reason, message, prompt_tokens, cached_tokens, generated_tokens

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while self.finish is None:
            try:
                kind, token, text, fin = self._engine._e.next(self.id, 100)
            except KeyboardInterrupt:
                self.cancel()
                raise
            if kind == "token":
                self.tokens.append(token)
            elif kind == "text":
                piece = _text(text)
                self._text.append(piece)
                return piece
            elif kind == "finished":
                self.finish = fin
        raise StopIteration

    def cancel(self) -> None:
        """Cancels the request (it finishes as "cancelled"); Ctrl-C while reading does this."""
        if self.finish is None:
            self._engine._e.cancel(self.id)

    def result(self) -> Generation:
        """Reads to the end: the text, tokens and finish reason ("stop", "length", "cancelled", "refused", "failed")."""
        for _ in self:
            pass
        assert self.finish is not None
        return Generation("".join(self._text), self.tokens, self.finish["finish_reason"], self.finish["prompt_tokens"])


_ENGINE_DEFAULTS = _offgraph.engine_defaults()  # og_engine_options_init's: one set with the C API's


class Engine:
    """Many requests through the scheduler (continuous batching over one shared cache, on a thread of its own).

    Args: max_sequences (requests running at once, default 4), max_session_tokens (prompt + max_new_tokens
    of one request, default 1024), step_tokens (rows per step, default 512; the three as og_engine_options'), max_queue (0 = unbounded), prefix_cache_entries (0 = off),
    kv_kind ("batched-sequence" or "batched-cell"), kv_dtype; spec="ngram" speculates by prompt lookup in every
    request (greedy text unchanged; docs/speculative.md) with spec_ngram_size (3), spec_ngram_min (1), draft_max (4)
    and draft_min (0); spec="draft" drafts with draft_model (an open Model with this model's vocabulary, which may
    be this model itself; implied by giving draft_model), stopping when its top token's probability is below
    draft_p_min (0.75). spec_stats() gives the acceptance counters.
    """

    def __init__(self, model: Model, *, max_sequences: int = _ENGINE_DEFAULTS["max_sequences"],
                 max_session_tokens: int = _ENGINE_DEFAULTS["max_session_tokens"],
                 step_tokens: int = _ENGINE_DEFAULTS["step_tokens"], max_queue: int = 0, prefix_cache_entries: int = 0,
                 kv_kind: str = "batched-sequence", kv_dtype: str = "f16", spec: Optional[str] = None,
                 spec_ngram_size: int = 3, spec_ngram_min: int = 1, draft_max: int = 4, draft_min: int = 0,
                 draft_model: Optional[Model] = None, draft_p_min: float = 0.75):
        spec = _spec_kind(spec, draft_model)
        self.model = model
        self.draft_model = draft_model  # kept for the caller; the engine holds the weights itself
        self._e = _offgraph.Engine(model._m, max_sequences, max_session_tokens, step_tokens, max_queue,
                                   prefix_cache_entries, kv_kind, kv_dtype,
                                   spec_ngram_size if spec == "ngram" else 0, spec_ngram_min, draft_max, draft_min,
                                   draft_model._m if spec == "draft" else None, float(draft_p_min))

    def submit(self, prompt: Union[str, Sequence[int]], max_new_tokens: int = 256, temperature: float = 0.0,
               **sampling) -> Request:
        """Queues a request (text is encoded with BOS; ids as given) and returns it at once."""
        ids = self.model._m.encode(prompt, True, False) if isinstance(prompt, str) else [int(t) for t in prompt]
        return Request(self, self._e.submit(ids, _gen_opts("submit", max_new_tokens, temperature, sampling)))

    def generate(self, prompts: Iterable[Union[str, Sequence[int]]], max_new_tokens: int = 256,
                 temperature: float = 0.0, **sampling) -> List[Generation]:
        """Submits every prompt, then reads each to its end (they run batched)."""
        requests = [self.submit(p, max_new_tokens, temperature, **sampling) for p in prompts]
        try:
            return [r.result() for r in requests]
        except KeyboardInterrupt:
            for r in requests:
                r.cancel()
            raise

    def stats(self) -> dict:
        """A metrics snapshot: waiting, running, kv_cache_usage, steps, tokens, finished, cancelled, ..."""
        return self._e.stats()

    def spec_stats(self) -> dict:
        """Speculation's counters (all 0 without spec): drafts (verify steps), draft_tokens, accepted_tokens,
        pauses, accepted_per_pos (verify steps that accepted draft position i, for the first 8 positions) and
        accepted_beyond (later positions): sum(accepted_per_pos) + accepted_beyond == accepted_tokens."""
        return self._e.spec_stats()

    def close(self) -> None:
        """Cancels what is left and stops the engine."""
        self._e.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


from ._chat import ChatResult, ChatStream  # noqa: E402  (after the classes it builds on)
