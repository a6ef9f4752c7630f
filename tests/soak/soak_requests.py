"""The soak's requests (tests/soak/serve_soak.py): greedy completions and chat
requests on stories260K whose prompts share prefixes (so the prefix cache and
its evictions are exercised), the bad requests and their statuses, and the
normal form replies are compared in (whole and streamed replies alike)."""

import collections
import json

COMPLETION_PATH = "/v1/completions"
CHAT_PATH = "/v1/chat/completions"

GenRequest = collections.namedtuple("GenRequest", "key path body chat max_tokens")
BadRequest = collections.namedtuple("BadRequest", "key method path body status")

# Longer than two 16-token blocks (the prefix cache's unit, --kv-block-size), so
# the prompts below that start with it share whole cached blocks.
STORY = ("Once upon a time, there was a little girl named Lily. She loved to play "
         "outside in the park with her friends.")
BEACH = "Tom and Sue went to the beach. They wanted to build a big sand castle"


def _completion(key, prompt, max_tokens, **extra):
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "seed": 7}
    body.update(extra)
    return GenRequest(key, COMPLETION_PATH, body, False, max_tokens)


def _chat(key, messages, max_tokens):
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "seed": 7}
    return GenRequest(key, CHAT_PATH, body, True, max_tokens)


def generation_requests():
    user = lambda text: {"role": "user", "content": text}
    return [
        _completion("story", STORY, 32),
        _completion("story_dog", STORY + " One day, she saw a big dog", 24),
        _completion("story_dog_ran", STORY + " One day, she saw a big dog. The dog ran to her and", 16),
        _completion("story_ball", STORY + " One day, she found a red ball under a tree", 48),
        _completion("story_stop", STORY + " One day,", 40, stop=["."]),
        _completion("beach", BEACH, 24),
        _completion("beach_sun", BEACH + ", but the sun was hot", 40),
        _completion("beach_n2", BEACH + ". Sue said", 16, n=2),
        _completion("short", "Once upon a time", 8),
        _completion("one_token", "The cat sat on the mat", 1),
        _completion("cat", "The cat sat on the mat and looked at the bird in the tree.", 20),
        _chat("chat_dog", [user("Tell me a story about a dog.")], 24),
        _chat("chat_system", [{"role": "system", "content": "You tell short stories."},
                              user("Once upon a time")], 32),
        _chat("chat_turns", [user("Who is Lily?"), {"role": "assistant", "content": "Lily is a little girl."},
                             user("What does she like?")], 16),
    ]


BAD_REQUESTS = [
    BadRequest("malformed_json", "POST", COMPLETION_PATH, b'{"prompt": "Once", ', 400),
    BadRequest("unknown_model", "POST", COMPLETION_PATH,
               {"model": "no-such-model", "prompt": "Once", "max_tokens": 4}, 404),
    BadRequest("over_session_limit", "POST", COMPLETION_PATH, {"prompt": "Once", "max_tokens": 100000}, 400),
    BadRequest("messages_not_list", "POST", CHAT_PATH, {"messages": "hi"}, 400),
    BadRequest("no_route", "GET", "/v1/no-such-route", None, 404),
]


def stream_body(body):
    return dict(body, stream=True, stream_options={"include_usage": True})


def whole_reply(obj, chat):
    """{"choices": [[index, text, finish_reason]...], "usage": [prompt, completion]}."""
    choices = sorted([c["index"], c["message"]["content"] if chat else c["text"], c["finish_reason"]]
                     for c in obj["choices"])
    return {"choices": choices, "usage": [obj["usage"]["prompt_tokens"], obj["usage"]["completion_tokens"]]}


def stream_reply(events, chat):
    """The same normal form from a stream's events (text pieces joined per choice)."""
    texts, finish, usage = {}, {}, None
    for ev in events:
        if "error" in ev:
            raise ValueError(f"error event in a stream: {json.dumps(ev)[:200]}")
        if ev.get("usage"):
            usage = [ev["usage"]["prompt_tokens"], ev["usage"]["completion_tokens"]]
        for c in ev.get("choices", []):
            i = c["index"]
            piece = c.get("delta", {}).get("content") if chat else c.get("text")
            texts[i] = texts.get(i, "") + (piece or "")
            if c.get("finish_reason"):
                finish[i] = c["finish_reason"]
    return {"choices": sorted([i, texts[i], finish.get(i)] for i in texts), "usage": usage}
