// serve's KV-event flags (--kv-events-*: vLLM's --kv-events-config fields as
// flags) and the publisher they open. Off unless --kv-events-endpoint is given.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/flags.h"
#include "server/kv_events_publisher.h"

namespace og::app {

struct KvEventsFlags {
  std::string endpoint;         // --kv-events-endpoint; empty: no events
  std::string topic;            // --kv-events-topic
  std::string replay_endpoint;  // --kv-events-replay-endpoint
  std::string hash_format = "int";
  std::string encoding = "array";  // --kv-events-encoding
  bool bind = false;               // --kv-events-bind
  int64_t buffer_steps = 10000;  // vLLM's buffer_steps
};

void add_kv_events_flags(Flags& fl, KvEventsFlags& f);
// Usage errors naming the flag: a malformed endpoint, a replay endpoint or a
// topic without --kv-events-endpoint, events without a prefix cache.
void check_kv_events_flags(const Flags& fl, const KvEventsFlags& f, bool prefix_cache);
// The publisher (sockets open, thread running), or null when events are off.
// A socket that cannot be opened (a port in use) is an error naming its flag.
std::unique_ptr<server::KvEventsPublisher> start_kv_events(const KvEventsFlags& f);

}  // namespace og::app
