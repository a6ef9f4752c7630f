"""KV-event messages read the way llm-d's vLLM adapter reads them, written from
its rules (llm-d-kv-cache v0.7.1, pkg/kvevents/engineadapter/vllm_adapter.go,
the version llm-d-inference-scheduler v0.8.0 is built with; and the later
map-event normalization of llm-d-kv-cache#661), not from offgraph's code:

- a message is 3 frames [topic, 8-byte big-endian sequence, payload];
- the topic splits on "@" into exactly kv, pod, model; the pod is the key the
  precise scorer matches against its endpoints ("IP:port");
- the payload is a msgpack array [ts float, events, data_parallel_rank?];
- an event is an array whose element 0 is its tag (v0.7.1), or, for newer
  consumers, a map whose "type" is the tag and whose fields are read by name
  (an absent field is nil, as an omitted trailing array element);
- BlockStored: block_hashes, parent_block_hash, token_ids (uint32 each),
  block_size, then the optional lora_id, medium, lora_name;
  BlockRemoved: block_hashes, then the optional medium; AllBlocksCleared;
- a hash is an unsigned 64-bit integer, or bytes of which the last 8 are
  read big-endian; extra trailing array elements are skipped.
"""
import msgpack

FIELDS = {
    "BlockStored": ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"),
    "BlockRemoved": ("block_hashes", "medium"),
    "AllBlocksCleared": (),
}
REQUIRED = {"BlockStored": 4, "BlockRemoved": 1, "AllBlocksCleared": 0}


class DecodeError(Exception):
    pass


def need(cond, what):
    if not cond:
        raise DecodeError(what)


def parse_topic(topic):
    """(pod, model) as the adapter splits kv@<pod>@<model>; (topic, "") otherwise."""
    parts = topic.split("@")
    return (parts[1], parts[2]) if len(parts) == 3 else (topic, "")


def parse_message(frames):
    """(pod, model, sequence, payload) of a [topic, seq, payload] message."""
    need(len(frames) == 3, f"expected 3 frames, got {len(frames)}")
    need(len(frames[1]) == 8, f"the sequence frame has {len(frames[1])} bytes, not 8")
    pod, model = parse_topic(frames[0].decode("utf-8"))
    return pod, model, int.from_bytes(frames[1], "big"), frames[2]


def hash_u64(raw):
    if isinstance(raw, int) and not isinstance(raw, bool):
        need(-(1 << 63) <= raw < (1 << 64), f"hash {raw} does not fit 64 bits")
        return raw & ((1 << 64) - 1)
    if isinstance(raw, bytes):
        need(len(raw) > 0, "an empty hash")
        return int.from_bytes(raw[-8:], "big")
    raise DecodeError(f"unsupported hash type {type(raw).__name__}")


def positional(event, maps):
    """[tag, field, ...] of an array event, or of a map event when maps is true."""
    if isinstance(event, dict):
        need(maps, "a map-encoded event (llm-d v0.7.1 reads only arrays)")
        tag = event.get("type")
        need(isinstance(tag, str), f"a map event without a string 'type': {event!r}")
        need(tag in FIELDS, f"unknown event tag {tag!r}")
        return [tag] + [event.get(f) for f in FIELDS[tag]]
    need(isinstance(event, list) and event, f"an event is not a tagged array: {event!r}")
    need(isinstance(event[0], str), f"the event tag is not a string: {event[0]!r}")
    need(event[0] in FIELDS, f"unknown event tag {event[0]!r}")
    n = len(FIELDS[event[0]])
    return list(event[:1 + n]) + [None] * (1 + n - len(event))


def optional(value, kind, what):
    need(value is None or isinstance(value, kind), f"{what} is {value!r}")
    return value


def decode_event(event, maps):
    p = positional(event, maps)
    tag = p[0]
    present = len(event) - 1 if isinstance(event, list) else sum(f in event for f in FIELDS[tag])
    need(present >= REQUIRED[tag], f"{tag} lacks required fields: {event!r}")
    if tag == "AllBlocksCleared":
        return {"type": tag}
    need(isinstance(p[1], list), f"{tag}: block_hashes is not an array")
    out = {"type": tag, "hashes": [hash_u64(h) for h in p[1]]}
    if tag == "BlockRemoved":
        out["medium"] = optional(p[2], str, "medium") or ""
        return out
    out["parent"] = 0 if p[2] is None else hash_u64(p[2])
    need(isinstance(p[3], list), "BlockStored: token_ids is not an array")
    for t in p[3]:
        need(isinstance(t, int) and 0 <= t < (1 << 32), f"token id {t!r} is not a uint32")
    out["tokens"] = p[3]
    need(isinstance(p[4], int), f"block_size is {p[4]!r}")
    out["block_size"] = p[4]
    optional(p[5], int, "lora_id")
    out["medium"] = optional(p[6], str, "medium") or ""
    optional(p[7], str, "lora_name")
    return out


def decode_batch(payload, maps=False):
    """(ts, [event dict]) of a batch payload; DecodeError names what breaks the rules."""
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    need(isinstance(batch, list) and 2 <= len(batch) <= 3, f"a batch is not [ts, events, rank]: {batch!r}"[:200])
    need(isinstance(batch[0], float), f"ts is {batch[0]!r}")
    need(isinstance(batch[1], list), "events is not an array")
    if len(batch) == 3:
        optional(batch[2], int, "data_parallel_rank")
    return batch[0], [decode_event(e, maps) for e in batch[1]]
