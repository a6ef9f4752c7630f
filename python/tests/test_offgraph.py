"""The offgraph Python module on stories260K: reference text, streaming, undo / fork,
logits, chat template, the engine, KeyboardInterrupt, and bad inputs."""
import _thread
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import offgraph
from conftest import CONTINUATION, PROMPT, PROMPT_IDS


def test_version_and_info(model):
    assert offgraph.__version__.count(".") == 2
    info = model.info
    assert info["architecture"] == "llama"
    assert info["n_vocab"] == 512
    assert model.chat_template.name == "0"


def test_experts_in_memory(tmp_path):
    # og-synth's tiny qwen3moe: by default its experts stay in the mapped file; experts_in_memory copies them.
    synth = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(offgraph.__file__))), "og-synth")
    if not os.path.exists(synth):
        pytest.skip("og-synth is not built next to the module")
    path = str(tmp_path / "moe.gguf")
    subprocess.run([synth, "--family", "qwen3moe", "--format", "gguf", "--out", path], check=True,
                   stdout=subprocess.DEVNULL)
    mapped = offgraph.Model(path, chat_template="0")
    copied = offgraph.Model(path, chat_template="0", experts_in_memory=True)
    assert mapped.info["weights_mapped_expert_bytes"] > 0
    assert copied.info["weights_mapped_expert_bytes"] == 0
    assert copied.info["weights_copied_bytes"] == (mapped.info["weights_copied_bytes"]
                                                   + mapped.info["weights_mapped_expert_bytes"])
    want = mapped.session().generate(PROMPT, max_new_tokens=8).text
    assert copied.session().generate(PROMPT, max_new_tokens=8).text == want


def test_tokenizer(model):
    tok = model.tokenizer
    assert tok.encode(PROMPT) == PROMPT_IDS
    assert tok.encode(PROMPT, add_special=False) == PROMPT_IDS[1:]
    assert tok.decode(PROMPT_IDS) == PROMPT
    assert tok.bos == 1 and tok.eos == 2
    assert tok.piece(1) == "<s>"
    assert tok.n_vocab == 512
    assert 2 in tok.stop_ids


def test_greedy_generate_equals_reference(model):
    s = model.session()
    g = s.generate(PROMPT, max_new_tokens=60)
    assert g.text == CONTINUATION
    assert len(g.tokens) == 60
    assert g.stop_reason == "max_new_tokens"
    assert s.position == 65
    assert s.stats()["generated_tokens"] == 60


def test_stream_equals_generate(model):
    s = model.session(kv_dtype="f32")
    st = s.stream(PROMPT, max_new_tokens=60)
    pieces = list(st)
    assert "".join(pieces) == CONTINUATION
    assert len(pieces) > 10
    assert st.result.text == CONTINUATION
    assert st.result.tokens == st.tokens
    s2 = model.session(kv_dtype="f32")
    assert s2.generate(PROMPT_IDS, max_new_tokens=60).tokens == st.tokens


def test_session_options(model):
    s = model.session(kv_windows=[0], kv_dtype="f32", kv_kind="reference", kv_max_capacity=100, prefill_chunk_size=2)
    assert s.capacity == 100
    assert s.generate(PROMPT, max_new_tokens=60).text == CONTINUATION


def test_undo_reset_fork(model):
    s = model.session()
    a = s.generate(PROMPT, max_new_tokens=10)
    b = s.generate(" Lily", max_new_tokens=10)
    pos = s.position
    s.undo()
    assert s.position == 15
    assert s.generate(" Lily", max_new_tokens=10).text == b.text
    assert s.position == pos
    f = s.fork()
    assert f.history == s.history
    np.testing.assert_array_equal(f.logits(), s.logits())
    assert f.generate(None, max_new_tokens=20).text == s.generate(None, max_new_tokens=20).text
    s.reset()
    assert s.position == 0
    with pytest.raises(offgraph.StateError, match="nothing to undo"):
        s.undo()
    assert a.text == CONTINUATION[: len(a.text)]


def test_logits_are_numpy_views(model):
    s = model.session()
    with pytest.raises(offgraph.StateError, match="no logits"):
        s.logits()
    s.prefill(PROMPT, logits=True)
    lg = s.logits()
    assert isinstance(lg, np.ndarray) and lg.dtype == np.float32 and lg.shape == (512,)
    assert int(np.argmax(lg)) == 432
    assert not lg.flags.writeable and not lg.flags.owndata  # a view, no copy
    kept = s.logits(copy=True)
    assert kept.flags.owndata
    g = s.generate(None, max_new_tokens=60)
    assert g.text == CONTINUATION


def test_chat_template(model_path):
    m = offgraph.Model(model_path, chat_template="chatml")
    text = m.chat_template.render([{"role": "user", "content": "hi"}])
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert m.chat_template.render([("user", "hi")], add_generation_prompt=False) == "<|im_start|>user\nhi<|im_end|>\n"
    ids = m.chat_template.encode([{"role": "user", "content": "hi"}])
    assert ids[0] == 1
    with pytest.raises(offgraph.InvalidArgumentError, match="robot"):
        m.chat_template.render([{"role": "robot", "content": "x"}])
    m.close()


def test_engine_batch_equals_single_runs(model):
    prompts = [PROMPT, "Lily", "The dog", "Once upon a time, there", "Tom", "A big"]
    singles = [model.session(kv_dtype="f32").generate(p, max_new_tokens=40).text for p in prompts]
    with model.engine(max_sequences=3, kv_dtype="f32", max_session_tokens=256) as e:
        results = e.generate(prompts, max_new_tokens=40)
        assert [r.text for r in results] == singles
        assert all(r.stop_reason == "length" for r in results)
        # Per-request iterators, read interleaved.
        reqs = [e.submit(p, max_new_tokens=40) for p in prompts[:3]]
        pieces = [[] for _ in reqs]
        live = True
        while live:
            live = False
            for i, r in enumerate(reqs):
                piece = next(r, None)
                if piece is not None:
                    pieces[i].append(piece)
                    live = True
        assert ["".join(p) for p in pieces] == singles[:3]
        st = e.stats()
        assert st["finished"] == len(prompts) + 3
        assert results[0].text == CONTINUATION[: len(results[0].text)]


def test_engine_speculation_keeps_the_greedy_text(model):
    story = "Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little"
    prompts = [story, "The dog ran to the park. The dog"]
    singles = [model.session(kv_dtype="f32").generate(p, max_new_tokens=40).text for p in prompts]
    with model.engine(max_sequences=2, kv_dtype="f32", max_session_tokens=256) as plain:
        plain.generate(prompts, max_new_tokens=40)
        plain_steps = plain.stats()["steps"]
    with model.engine(max_sequences=2, kv_dtype="f32", max_session_tokens=256, spec="ngram", draft_max=5) as e:
        assert [r.text for r in e.generate(prompts, max_new_tokens=40)] == singles
        assert e.stats()["steps"] < plain_steps  # drafts were accepted
        st = e.spec_stats()
        assert 0 < st["accepted_tokens"] <= st["draft_tokens"]
        assert sum(st["accepted_per_pos"]) + st["accepted_beyond"] == st["accepted_tokens"]
    with pytest.raises(offgraph.InvalidArgumentError, match="spec_ngram_min"):
        model.engine(spec="ngram", spec_ngram_size=2, spec_ngram_min=3)
    with pytest.raises(ValueError, match="needs draft_model"):
        model.engine(spec="draft")
    with pytest.raises(ValueError, match="draft_model is for spec='draft'"):
        model.engine(spec="ngram", draft_model=model)


def test_engine_draft_model_keeps_the_greedy_text(model, model_path):
    prompts = [PROMPT, "The dog ran to the park. The dog"]
    with model.engine(max_sequences=2, kv_dtype="f32", max_session_tokens=256) as plain:
        want = [r.text for r in plain.generate(prompts, max_new_tokens=40)]
        assert plain.spec_stats()["drafts"] == 0
    # The target as its own draft (a second Model of the same file): every draft token is accepted.
    draft = offgraph.Model(model_path)
    with model.engine(max_sequences=2, kv_dtype="f32", max_session_tokens=256, spec="draft", draft_model=draft,
                      draft_max=3, draft_p_min=0.0) as e:
        assert [r.text for r in e.generate(prompts, max_new_tokens=40)] == want
        st = e.spec_stats()
        assert st["drafts"] > 0 and st["accepted_tokens"] == st["draft_tokens"] > 0
        assert sum(st["accepted_per_pos"]) + st["accepted_beyond"] == st["accepted_tokens"]
        assert st["accepted_per_pos"][3:] == [0] * 5  # never past draft_max
    other = offgraph.Model(os.path.join(os.path.dirname(model_path), "../llama-2-tiny-random-gguf/llama-2-tiny-random.gguf"))
    with pytest.raises(offgraph.InvalidArgumentError, match="^draft_model: .*same tokenizer"):
        model.engine(draft_model=other)
    with pytest.raises(offgraph.InvalidArgumentError, match="spec_draft_p_min"):
        model.engine(draft_model=draft, draft_p_min=2.0)


def test_session_speculation_keeps_the_greedy_text(model, model_path):
    story = "Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little"
    plain = model.session(kv_dtype="f32")
    want = [plain.generate(story, max_new_tokens=40).text, plain.generate(None, max_new_tokens=20).text]
    draft = offgraph.Model(model_path)
    for spec in ({"spec": "ngram"}, {"draft_model": draft, "draft_p_min": 0.0}):
        s = model.session(kv_dtype="f32", **spec)
        got = [s.generate(story, max_new_tokens=40).text]
        stream = s.stream(None, max_new_tokens=20)
        got.append("".join(stream))
        assert got == want, spec
        assert len(stream.tokens) == 20  # one token per step of the stream, several per target forward
        st = s.spec_stats()
        assert 0 < st["accepted_tokens"] <= st["draft_tokens"]
        assert sum(st["accepted_per_pos"]) + st["accepted_beyond"] == st["accepted_tokens"]
        if "draft_model" in spec:
            assert st["accepted_tokens"] == st["draft_tokens"]
        assert s.stats()["decode_steps"] < 60
    assert plain.spec_stats()["drafts"] == 0
    with pytest.raises(offgraph.InvalidArgumentError, match="spec_ngram_size"):
        model.session(spec="ngram", spec_ngram_size=17)


def test_engine_cancel(model):
    with model.engine(max_sequences=1, max_session_tokens=512) as e:
        r = e.submit(PROMPT, max_new_tokens=400)
        next(r)
        r.cancel()
        assert r.result().stop_reason == "cancelled"
        refused = e.submit(PROMPT, max_new_tokens=1000).result()
        assert refused.stop_reason == "refused"


def test_keyboard_interrupt_cancels_generation(model):
    s = model.session(kv_max_capacity=2048)
    seen = []

    def interrupt_soon():
        _thread.interrupt_main()

    # Python's own SIGINT handler, even when this process started with SIGINT ignored.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    st = s.stream(PROMPT, max_new_tokens=2000)
    try:
        with pytest.raises(KeyboardInterrupt):
            for piece in st:
                seen.append(piece)
                if len(seen) == 3:
                    threading.Thread(target=interrupt_soon).start()
    finally:
        signal.signal(signal.SIGINT, old)
    st.cancel()  # what the KeyboardInterrupt left (already cancelled when it hit stream_next)
    assert st.result is not None and st.result.stop_reason == "cancelled"
    assert 3 <= len(st.result.tokens) < 2000
    # The session is usable afterwards.
    s.undo()
    assert s.position == 0
    assert s.generate(PROMPT, max_new_tokens=60).text == CONTINUATION


def test_sigint_in_a_real_process(model_path):
    # Ctrl-C to a process in a long generate(): KeyboardInterrupt, the turn cancelled, the session usable.
    script = textwrap.dedent(f"""
        import signal, sys, offgraph
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
        m = offgraph.Model({model_path!r})
        s = m.session(kv_max_capacity=4096)
        print("started", flush=True)
        try:
            s.generate("Once upon a time", max_new_tokens=4000, stop_at_eos=False)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", s.position < 4005, flush=True)
        s.undo()
        print(s.generate("Once upon a time", max_new_tokens=5).stop_reason, flush=True)
    """)
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    assert p.stdout.readline().strip() == "started"
    import time
    time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    lines = out.split()
    assert lines[:2] == ["interrupted", "True"], out
    assert lines[-1] == "max_new_tokens", out


def test_bad_inputs_raise_with_the_c_message(model, model_path):
    with pytest.raises(offgraph.InvalidArgumentError, match="no such file or directory"):
        offgraph.Model("/nonexistent/model.gguf")
    s = model.session()
    with pytest.raises(offgraph.OutOfRangeError, match=r"\[1\]: token id 999 is out of range \[0, 512\)"):
        s.generate([1, 999])
    with pytest.raises(IndexError):
        model.tokenizer.decode([5000])
    with pytest.raises(offgraph.InvalidArgumentError, match=r"sampler.temperature is -1, outside \[0, 2\]"):
        s.generate(PROMPT, temperature=-1)
    with pytest.raises(ValueError, match='kv_dtype "f8"'):
        model.session(kv_dtype="f8")
    with pytest.raises(offgraph.CapacityError, match="does not fit"):
        model.session(kv_max_capacity=4).generate(PROMPT)
    with pytest.raises(offgraph.InvalidArgumentError, match="nothing to generate from"):
        s.generate(None)
    assert s.position == 0
    m = offgraph.Model(model_path)
    s2 = m.session()
    m.close()
    with pytest.raises(offgraph.ClosedError, match="closed"):
        m.tokenizer.encode("x")
    # Sessions keep the weights (token ids; text needs the closed model's tokenizer).
    assert s2.generate(PROMPT_IDS, max_new_tokens=60).text == CONTINUATION
    with pytest.raises(offgraph.ClosedError, match="the model is closed"):
        s2.generate(PROMPT)
    s2.close()
    with pytest.raises(offgraph.ClosedError):
        s2.position


def test_session_from_two_threads_is_busy(model):
    s = model.session(kv_max_capacity=4096)
    errors = []
    started = threading.Event()

    def worker():
        st = s.stream(PROMPT, max_new_tokens=3000, stop_at_eos=False)
        started.set()
        for _ in st:
            pass

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    import time
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and t.is_alive():
        try:
            s._s.position()  # the worker is inside stream_next (GIL released) most of the time
        except offgraph.BusyError as e:
            errors.append(str(e))
            break
        time.sleep(0.0005)
    t.join()
    assert errors and "in use by another thread" in errors[0]


def test_missing_file_is_file_not_found(tmp_path, model_path):
    missing = str(tmp_path / "nope.gguf")
    with pytest.raises(FileNotFoundError, match="no such file or directory") as e:
        offgraph.Model(missing)
    assert e.value.filename == missing
    assert isinstance(e.value, offgraph.InvalidArgumentError)  # and still a ValueError, as before
    with pytest.raises(FileNotFoundError):
        offgraph.Model(model_path, tokenizer=str(tmp_path / "tokenizer.json"))


def test_unknown_keyword_names_the_public_method(model):
    s = model.session()
    for call in (lambda: s.generate(PROMPT, tempreature=1.0), lambda: s.stream(PROMPT, tempreature=1.0),
                 lambda: model.engine().submit(PROMPT, tempreature=1.0)):
        with pytest.raises(TypeError) as e:
            call()
        assert "unexpected keyword argument 'tempreature'" in str(e.value)
        assert "_gen_opts" not in str(e.value)
    assert s.generate(PROMPT_IDS, max_new_tokens=60, top_k=1, seed=3).text == CONTINUATION


def test_failed_stream_raises_its_own_error_and_frees_the_session(model):
    # A stream step that fails (the library then takes the turn back) reaches the caller as its own
    # error, not "no stream is running", and the session's other calls work afterwards. (An
    # embedding-only model, which used to fail here, is now refused when the session opens:
    # test_embed_cancel.py.) The failure is injected into the handle's stream_next.
    s = model.session()
    real = s._s

    class Failing:
        def __getattr__(self, name):
            return getattr(real, name)

        def stream_next(self):
            real.stream_cancel()
            real.stream_finish()
            real.undo()  # as the library does when a step fails
            raise offgraph.Error("the model produced a non-finite logit (NaN or inf) at position 2")

    s._s = Failing()
    with pytest.raises(offgraph.Error) as e:
        s.generate([1, 2, 3], max_new_tokens=4)
    assert not isinstance(e.value, offgraph.StateError), str(e.value)
    assert "non-finite" in str(e.value)
    s._s = real
    assert s.position == 0
    s.reset()
    assert s.generate(PROMPT, max_new_tokens=60).text == CONTINUATION
    s.close()
