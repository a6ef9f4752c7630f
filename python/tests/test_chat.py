"""Session.chat and Model.create_chat_completion on scripted Qwen 3 models (og-synth --script, written by
the built og-synth): plain chat, a tool call round trip, forced and named calls, parallel_tool_calls
False, json_schema after the reasoning, streaming chunks, and bad requests naming the field."""
import json
import os
import subprocess
import tempfile

import pytest

import offgraph

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEMPLATE = os.path.join(ROOT, "tests/template/data/templates/Qwen-Qwen3-0.6B.jinja")
SYNTH = os.environ.get("OG_SYNTH", os.path.join(os.path.dirname(offgraph.__file__), "..", "..", "og-synth"))

CALL2 = "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"
TOOL_SCRIPT = {
    "tokens": [{"text": "<|im_start|>", "special": True}, {"text": "<|im_end|>", "special": True},
               {"text": "<think>"}, {"text": "</think>"}, {"text": "<tool_call>"}, {"text": "</tool_call>"},
               {"text": "\nThe user wants the weather.\n"},
               {"text": "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"}, {"text": CALL2}],
    "chains": [["\n", "<think>", "\nThe user wants the weather.\n", "</think>", "\n\n", "<tool_call>",
                "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n", "</tool_call>", CALL2,
                "<|im_end|>"]],
}
WEATHER = {"type": "object", "properties": {"city": {"enum": ["Paris"]}}, "required": ["city"],
           "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "description": "The time"}}]
ANSWER = {"type": "object", "properties": {"weather": {"enum": ["sunny"]}}, "required": ["weather"],
          "additionalProperties": False}
SCHEMA = {"type": "json_schema", "json_schema": {"name": "w", "schema": ANSWER}}


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory() as d:
        yield d


def _synth(scratch, name, script_path):
    assert os.path.exists(SYNTH), f"og-synth is missing (build it): {SYNTH}"
    out = os.path.join(scratch, name + ".gguf")
    subprocess.run([SYNTH, "--family", "qwen3", "--format", "gguf", "--out", out, "--script", script_path,
                    "--chat-template", TEMPLATE], check=True, stdout=subprocess.DEVNULL)
    return offgraph.Model(out)


@pytest.fixture(scope="module")
def tool_model(scratch):
    script = os.path.join(scratch, "tool.json")
    with open(script, "w") as f:
        json.dump(TOOL_SCRIPT, f)
    return _synth(scratch, "tool", script)


@pytest.fixture(scope="module")
def reply_model(scratch):
    return _synth(scratch, "reply", os.path.join(ROOT, "tests/e2e/data/script_qwen3_reply.json"))


def test_plain_chat(reply_model):
    r = reply_model.session().chat([{"role": "user", "content": "Hi"}])
    assert r.finish_reason == "stop"
    assert r.message == {"role": "assistant", "content": "Hello! How can I help you today?",
                         "reasoning_content": "The user greets me."}
    assert r.usage["prompt_tokens"] > 0 and r.usage["completion_tokens"] == len(r.generation.tokens)


def test_tool_round_trip_keeps_the_cache(tool_model):
    s = tool_model.session(kv_max_capacity=1024)
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    r = s.chat(messages, tools=TOOLS)
    assert r.finish_reason == "tool_calls"
    assert r.message["content"] is None
    assert [c["function"]["name"] for c in r.tool_calls] == ["get_weather", "get_time"]
    assert json.loads(r.tool_calls[0]["function"]["arguments"]) == {"city": "Paris"}
    messages.append(r.message)
    messages += [{"role": "tool", "tool_call_id": c["id"], "content": text}
                 for c, text in zip(r.tool_calls, ["sunny", "noon"])]
    r2 = s.chat(messages, tools=TOOLS, response_format=SCHEMA)
    assert r2.finish_reason == "stop"
    assert r2.reasoning_content == "The user wants the weather."
    assert json.loads(r2.content) == {"weather": "sunny"}
    assert r2.usage["cached_tokens"] >= r.usage["prompt_tokens"]


def test_forced_named_and_single_calls(tool_model):
    s = tool_model.session(kv_max_capacity=1024)
    ask = [{"role": "user", "content": "Weather in Paris?"}]
    one = s.chat(ask, tools=TOOLS, parallel_tool_calls=False)
    assert [c["function"]["name"] for c in one.tool_calls] == ["get_weather"]
    forced = s.chat(ask, tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    assert forced.reasoning_content == "The user wants the weather."
    assert [c["function"]["name"] for c in forced.tool_calls] == ["get_weather"]
    named = s.chat(ask, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}},
                   parallel_tool_calls=False)
    assert [c["function"]["name"] for c in named.tool_calls] == ["get_time"]
    assert named.finish_reason == "tool_calls"


def test_json_schema_after_reasoning(reply_model):
    r = reply_model.session().chat([{"role": "user", "content": "Hi"}], response_format={
        "type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {
            "answer": {"enum": ["yes", "no"]}}, "required": ["answer"], "additionalProperties": False}}})
    assert r.reasoning_content == "The user greets me."
    assert json.loads(r.content)["answer"] in ("yes", "no")


def test_create_chat_completion(tool_model):
    ask = [{"role": "user", "content": "Weather in Paris?"}]
    c = tool_model.create_chat_completion(ask, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
                                          temperature=0, max_tokens=200)
    assert c["object"] == "chat.completion"
    choice = c["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert c["usage"]["total_tokens"] == c["usage"]["prompt_tokens"] + c["usage"]["completion_tokens"]

    chunks = list(tool_model.create_chat_completion(ask, tools=TOOLS, stream=True, seed=3, max_tokens=200))
    assert all(ch["object"] == "chat.completion.chunk" for ch in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    deltas = [ch["choices"][0]["delta"] for ch in chunks[1:-1]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "The user wants the weather."
    names = [t["function"]["name"] for d in deltas for t in d.get("tool_calls", []) if "name" in t["function"]]
    assert names == ["get_weather", "get_time"]
    args = "".join(t["function"]["arguments"] for d in deltas for t in d.get("tool_calls", []) if t["index"] == 0)
    assert json.loads(args) == {"city": "Paris"}


def test_bad_requests_name_the_field(tool_model):
    s = tool_model.session()
    ask = [{"role": "user", "content": "Hi"}]
    cases = [
        (dict(messages=[{"role": "robot", "content": "Hi"}]), "'messages[0].role'"),
        (dict(messages=ask, tools=TOOLS, tool_choice="get_wether"), "'tool_choice'"),
        (dict(messages=ask, response_format={"type": "json_schema", "json_schema": {"schema": {"type": 7}}}),
         "'response_format.json_schema.schema'"),
        (dict(messages=ask, grammar="root ::= undefined"), "'grammar'"),
        (dict(messages=["Hi"]), "'messages[0]'"),
    ]
    for kwargs, field in cases:
        with pytest.raises(offgraph.InvalidArgumentError, match=field.replace("[", r"\[").replace("]", r"\]")):
            s.chat(**kwargs)
    with pytest.raises(TypeError):
        s.chat(ask, no_such_option=1)
    assert s.position == 0  # refused requests leave the session as it was


def test_limits_bound_a_chats_schema_and_bad_values_name_the_field(reply_model):
    defaults = offgraph.get_limits()
    assert defaults["schema_max_enum_values"] == 65536 and defaults["template_max_ms"] == 10000
    fmt = {"type": "json_schema", "json_schema": {"schema": {"enum": list(range(12))}}}
    try:
        assert offgraph.set_limits(schema_max_enum_values=10)["schema_max_enum_values"] == 10
        assert offgraph.get_limits()["schema_max_work"] == defaults["schema_max_work"]  # the others kept
        with pytest.raises(offgraph.InvalidArgumentError, match="has 12 values, above the limit 10"):
            reply_model.session().chat([{"role": "user", "content": "Hi"}], response_format=fmt, max_new_tokens=4)
        with pytest.raises(offgraph.InvalidArgumentError,
                           match=r"og_limits.template_max_value_bytes is 10, outside \[1024, "):
            offgraph.set_limits(template_max_value_bytes=10, schema_max_enum_values=20)
        with pytest.raises(offgraph.InvalidArgumentError, match="unknown limit 'schema_max_enums'"):
            offgraph.set_limits(schema_max_enums=3)
        assert offgraph.get_limits()["schema_max_enum_values"] == 10  # a refused call changes nothing
    finally:
        offgraph.set_limits(**defaults)
    assert offgraph.get_limits() == defaults
