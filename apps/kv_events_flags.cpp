// serve's --kv-events-* flags and the publisher they start.
#include "kv_events_flags.h"

namespace og::app {

void add_kv_events_flags(Flags& fl, KvEventsFlags& f) {
  fl.add_string("kv-events-endpoint", &f.endpoint,
                "publish KV-cache events (vLLM's format, for llm-d's precise prefix scorer) on a ZeroMQ PUB "
                "socket: bound when the address holds * or :: (tcp://*:5557: every interface; tcp://[::1]:5557) or "
                "is ipc:// (a path another live server holds is refused), else connected to a subscriber that "
                "binds (tcp://indexer:5557); none: no events. Events carry prompt token ids: bind one interface "
                "(--kv-events-bind) unless every network that reaches the host may read them",
                "ENDPOINT");
  fl.add_string("kv-events-topic", &f.topic,
                "the topic frame of every event message (llm-d v0.8 reads kv@<pod IP>:<serve port>@<model>); empty by "
                "default, as vLLM's",
                "TOPIC");
  fl.add_string("kv-events-replay-endpoint", &f.replay_endpoint,
                "bind a ZeroMQ ROUTER socket here that resends kept event batches from a sequence number "
                "(tcp://*:5558)",
                "ENDPOINT");
  fl.add_choice("kv-events-hash-format", &f.hash_format, {"int", "bytes"},
                "block hashes in events: int = the SHA-256's low 64 bits (vLLM's default), bytes = all 32 bytes "
                "(vLLM with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0)");
  fl.add_choice("kv-events-encoding", &f.encoding, {"array", "map"},
                "events as vLLM 0.11 encodes them (array: positional, what llm-d v0.7/v0.8 read) or as current vLLM "
                "does (map: field names, after vllm#42892)");
  fl.add_bool("kv-events-bind", &f.bind,
              "bind --kv-events-endpoint even when it names one address (tcp://127.0.0.1:5557, tcp://10.0.0.5:5557), "
              "so that only that interface takes subscribers");
  fl.add_int("kv-events-buffer-steps", &f.buffer_steps, 1, 1 << 24,
             "event batches (one per scheduler step) kept for replay");
}

void check_kv_events_flags(const Flags& fl, const KvEventsFlags& f, bool prefix_cache) {
  const bool on = fl.given("kv-events-endpoint");
  if (on && f.endpoint.empty()) usage_fail("--kv-events-endpoint: the endpoint is empty");
  if (on) {
    if (std::string p = server::kv_events_endpoint_problem(f.endpoint); !p.empty())
      usage_fail("--kv-events-endpoint: " + p);
    if (!prefix_cache)
      usage_fail("--kv-events-endpoint: events come from the prefix cache, which --prefix-cache-entries 0 turns off");
  }
  for (const char* name : {"kv-events-topic", "kv-events-replay-endpoint", "kv-events-hash-format",
                           "kv-events-buffer-steps", "kv-events-encoding", "kv-events-bind"}) {
    if (!on && fl.given(name)) usage_fail(std::string("--") + name + " needs --kv-events-endpoint");
  }
  if (fl.given("kv-events-replay-endpoint")) {
    if (std::string p = server::kv_events_endpoint_problem(f.replay_endpoint); !p.empty())
      usage_fail("--kv-events-replay-endpoint: " + p);
  }
}

std::unique_ptr<server::KvEventsPublisher> start_kv_events(const KvEventsFlags& f) {
  if (f.endpoint.empty()) return nullptr;
  server::KvEventsOptions o;
  o.endpoint = f.endpoint;
  o.replay_endpoint = f.replay_endpoint;
  o.topic = f.topic;
  o.hash_format = server::kv_hash_format_of(f.hash_format);
  o.encoding = server::kv_event_encoding_of(f.encoding);
  o.force_bind = f.bind;
  o.buffer_steps = static_cast<size_t>(f.buffer_steps);
  try {
    return std::make_unique<server::KvEventsPublisher>(o);
  } catch (const server::KvEventsSetupError& e) {
    fail(e.replay ? "--kv-events-replay-endpoint: " : "--kv-events-endpoint: ", e.what());
  }
}

}  // namespace og::app
