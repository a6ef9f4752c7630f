// Server metrics and their Prometheus text rendering (format 0.0.4). The
// gauges an inference gateway reads keep vLLM's names
// (vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc in 0..1); the rest are offgraph: counters and
// histograms. Observations are thread-safe (HTTP threads and the scheduler's
// callback thread record into the same histograms).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/scheduler.h"

namespace og::server {

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double x);

  struct Data {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket (not cumulative); bounds.size() + 1 (+Inf last)
    double sum = 0;
    uint64_t count = 0;
  };
  Data data() const;

 private:
  mutable std::mutex mu_;
  Data d_;
};

// The KV-event publisher's counts (events sent, events dropped on a full queue).
struct KvEventCounts {
  uint64_t published = 0, dropped = 0;
};

// What the HTTP layer counts itself (the scheduler's counters come from its snapshot).
class ServerMetrics {
 public:
  ServerMetrics();

  Histogram ttft_s, inter_token_s, e2e_s, queue_s, prefill_s, decode_s;
  Histogram prompt_tokens, generation_tokens;

  // One finished generation request, by finish reason ("stop", "length",
  // "cancelled", "refused", "failed") and endpoint ("chat", "completion").
  void count_request(const std::string& endpoint, const std::string& finish_reason);
  // One HTTP response by status code.
  void count_http(int status);

  std::map<std::pair<std::string, std::string>, uint64_t> requests() const;
  std::map<int, uint64_t> http() const;

  // Set once before the server starts when KV events are published; read by
  // every /metrics render. Empty: no KV-event series.
  std::function<KvEventCounts()> kv_events;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> requests_;
  std::map<int, uint64_t> http_;
};

// The /metrics body. `model` labels every series (model_name, as vLLM).
std::string render_prometheus(const SchedulerSnapshot& s, const ServerMetrics& m, const std::string& model);

}  // namespace og::server
