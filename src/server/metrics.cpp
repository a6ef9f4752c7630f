// Histograms, counters and the Prometheus text exposition of /metrics.
#include "server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

namespace og::server {

namespace {

const std::vector<double> kLatencyBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5,
                                            0.75,  1.0,    2.5,   5.0,  7.5,   10.0, 20.0,  40.0, 80.0, 160.0};
const std::vector<double> kTokenBounds = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};

std::string num(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

// A label value with \, " and newline escaped as the text format requires.
std::string escape_label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

class Writer {
 public:
  explicit Writer(const std::string& model) : label_("model_name=\"" + escape_label(model) + "\"") {}

  void header(const std::string& name, const char* type, const char* help) {
    out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, double value, const std::string& extra = "") {
    out_ += name + "{" + label_ + (extra.empty() ? "" : "," + extra) + "} " + num(value) + "\n";
  }
  void gauge(const std::string& name, double v, const char* help) {
    header(name, "gauge", help);
    sample(name, v);
  }
  void counter(const std::string& name, double v, const char* help) {
    header(name, "counter", help);
    sample(name, v);
  }
  void histogram(const std::string& name, const Histogram& h, const char* help) {
    const Histogram::Data d = h.data();
    header(name, "histogram", help);
    uint64_t cum = 0;
    for (size_t i = 0; i < d.bounds.size(); ++i) {
      cum += d.counts[i];
      sample(name + "_bucket", static_cast<double>(cum), "le=\"" + num(d.bounds[i]) + "\"");
    }
    cum += d.counts.back();
    sample(name + "_bucket", static_cast<double>(cum), "le=\"+Inf\"");
    sample(name + "_sum", d.sum);
    sample(name + "_count", static_cast<double>(d.count));
  }
  std::string& out() { return out_; }

 private:
  std::string label_;
  std::string out_;
};

// The request histograms, under a prefix ("offgraph:", and "vllm:" with
// vLLM's names, which are the same).
void histograms(Writer& w, const ServerMetrics& m, const std::string& prefix) {
  const struct {
    const char* name;
    const Histogram ServerMetrics::*h;
    const char* help;
  } kAll[] = {
      {"time_to_first_token_seconds", &ServerMetrics::ttft_s, "Submit to first token, per request."},
      {"inter_token_latency_seconds", &ServerMetrics::inter_token_s, "Time between consecutive tokens of a request."},
      {"e2e_request_latency_seconds", &ServerMetrics::e2e_s, "Submit to finish, per request."},
      {"request_queue_time_seconds", &ServerMetrics::queue_s, "Submit to admission, per request."},
      {"request_prefill_time_seconds", &ServerMetrics::prefill_s, "Admission to prompt in the cache, per request."},
      {"request_decode_time_seconds", &ServerMetrics::decode_s, "First token to finish, per request."},
      {"request_prompt_tokens", &ServerMetrics::prompt_tokens, "Prompt tokens per request."},
      {"request_generation_tokens", &ServerMetrics::generation_tokens, "Generated tokens per request."},
  };
  for (const auto& x : kAll) w.histogram(prefix + x.name, m.*x.h, x.help);
}

// Speculative decoding (serve --spec ngram), vLLM's spec_decode counters
// with the _total suffix its exporter adds: drafts = verify steps, draft
// tokens carried, draft tokens accepted, and accepted per draft position
// (whose sum is the accepted tokens). All 0 without speculation.
void spec_metrics(Writer& w, const SchedulerSnapshot& s) {
  w.counter("vllm:spec_decode_num_drafts_total", static_cast<double>(s.spec_drafts),
            "Speculative verify steps (drafts verified).");
  w.counter("vllm:spec_decode_num_draft_tokens_total", static_cast<double>(s.spec_draft_tokens),
            "Draft tokens proposed and verified.");
  w.counter("vllm:spec_decode_num_accepted_tokens_total", static_cast<double>(s.spec_accepted_tokens),
            "Draft tokens accepted.");
  w.header("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
           "Verify steps that accepted the draft token at each position (0 = the first).");
  for (size_t i = 0; i < s.spec_accepted_per_pos.size(); ++i)
    w.sample("vllm:spec_decode_num_accepted_tokens_per_pos_total", static_cast<double>(s.spec_accepted_per_pos[i]),
             "position=\"" + std::to_string(i) + "\"");
}

// What vLLM's exporter names and llm-d's endpoint picker and vLLM's
// dashboards read, beside the offgraph: series (the same figures).
void vllm_metrics(Writer& w, const SchedulerSnapshot& s, const ServerMetrics& m) {
  w.header("vllm:cache_config_info", "gauge", "The KV cache's configuration (labels; the value is 1).");
  w.sample("vllm:cache_config_info", 1,
           "block_size=\"" + std::to_string(s.block_size) + "\",num_gpu_blocks=\"" + std::to_string(s.num_blocks) +
               "\",cache_dtype=\"" + escape_label(s.cache_dtype) + "\",enable_prefix_caching=\"" +
               (s.prefix_caching ? "True" : "False") + "\"");
  w.counter("vllm:prefix_cache_queries_total", static_cast<double>(s.prefix_query_tokens),
            "Prefix cache queries, in prompt tokens looked up.");
  w.counter("vllm:prefix_cache_hits_total", static_cast<double>(s.prefix_hit_tokens),
            "Prefix cache hits, in prompt tokens taken from the cache.");
  w.counter("vllm:num_preemptions_total", 0,
            "Requests preempted (never: a request is admitted only when its whole session fits).");
  w.counter("vllm:prompt_tokens_total", static_cast<double>(s.prompt_tokens), "Prompt tokens of admitted requests.");
  w.counter("vllm:generation_tokens_total", static_cast<double>(s.generated_tokens), "Tokens generated.");
  w.header("vllm:request_success_total", "counter", "Requests finished normally, by finish reason.");
  std::map<std::string, uint64_t> by_reason;
  for (const auto& [key, n] : m.requests())
    if (key.second == "stop" || key.second == "length") by_reason[key.second] += n;
  for (const auto& [reason, n] : by_reason)
    w.sample("vllm:request_success_total", static_cast<double>(n), "finished_reason=\"" + reason + "\"");
  histograms(w, m, "vllm:");
  spec_metrics(w, s);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) {
  std::sort(bounds.begin(), bounds.end());
  d_.bounds = std::move(bounds);
  d_.counts.assign(d_.bounds.size() + 1, 0);
}

void Histogram::observe(double x) {
  if (std::isnan(x)) return;
  const size_t i = std::lower_bound(d_.bounds.begin(), d_.bounds.end(), x) - d_.bounds.begin();  // le: x <= bound
  std::lock_guard<std::mutex> lock(mu_);
  ++d_.counts[i];
  d_.sum += x;
  ++d_.count;
}

Histogram::Data Histogram::data() const {
  std::lock_guard<std::mutex> lock(mu_);
  return d_;
}

ServerMetrics::ServerMetrics()
    : ttft_s(kLatencyBounds),
      inter_token_s(kLatencyBounds),
      e2e_s(kLatencyBounds),
      queue_s(kLatencyBounds),
      prefill_s(kLatencyBounds),
      decode_s(kLatencyBounds),
      prompt_tokens(kTokenBounds),
      generation_tokens(kTokenBounds) {}

void ServerMetrics::count_request(const std::string& endpoint, const std::string& finish_reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, finish_reason}];
}

void ServerMetrics::count_http(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_[status];
}

std::map<std::pair<std::string, std::string>, uint64_t> ServerMetrics::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::map<int, uint64_t> ServerMetrics::http() const {
  std::lock_guard<std::mutex> lock(mu_);
  return http_;
}

std::string render_prometheus(const SchedulerSnapshot& s, const ServerMetrics& m, const std::string& model) {
  Writer w(model);
  w.gauge("vllm:num_requests_running", s.running, "Sequences admitted to the batch and not finished (a request of n choices counts n).");
  w.gauge("vllm:num_requests_waiting", s.waiting, "Sequences submitted and waiting for admission (a request of n choices counts n).");
  w.gauge("vllm:kv_cache_usage_perc", std::clamp(s.kv_cache_usage, 0.0, 1.0),
          "Fraction of the KV block pool held by running requests (0 to 1).");
  w.counter("offgraph:prompt_tokens_total", static_cast<double>(s.prompt_tokens), "Prompt tokens of admitted requests.");
  w.counter("offgraph:generation_tokens_total", static_cast<double>(s.generated_tokens), "Tokens generated.");
  w.counter("offgraph:prefix_cache_queries_total", static_cast<double>(s.prefix_lookups),
            "Prefix cache lookups (one per admitted request that may use it).");
  w.counter("offgraph:prefix_cache_hits_total", static_cast<double>(s.prefix_hits),
            "Prefix cache lookups that reused a cached prefix.");
  w.counter("offgraph:prefix_cache_hit_tokens_total", static_cast<double>(s.prefix_hit_tokens),
            "Prompt tokens taken from the prefix cache instead of being computed.");
  w.counter("offgraph:prefix_cache_evictions_total", static_cast<double>(s.prefix_evictions),
            "Prefix cache entries evicted.");
  w.counter("offgraph:prefix_cache_disk_hits_total", static_cast<double>(s.prefix_disk_hits),
            "Prefix cache lookups that read blocks from the disk tier (--prefix-cache-dir).");
  w.counter("offgraph:prefix_cache_disk_hit_tokens_total", static_cast<double>(s.prefix_disk_hit_tokens),
            "Prompt positions read from the prefix cache's disk tier instead of being computed.");
  w.counter("offgraph:prefix_cache_disk_writes_total", static_cast<double>(s.prefix_disk_writes),
            "Blocks written to the prefix cache's disk tier.");
  w.gauge("offgraph:prefix_cache_disk_bytes", static_cast<double>(s.prefix_disk_bytes),
          "Bytes of block files in the prefix cache's disk directory (all replicas sharing it).");
  w.gauge("offgraph:prefix_cache_entries", s.prefix_entries, "Entries in the prefix cache.");
  w.gauge("offgraph:kv_cache_bytes_allocated", static_cast<double>(s.cache_bytes_allocated),
          "Bytes allocated by the shared KV cache.");
  w.counter("offgraph:scheduler_steps_total", static_cast<double>(s.steps), "Scheduler steps (one forward each).");
  w.counter("offgraph:scheduler_rows_total", static_cast<double>(s.rows), "Rows forwarded over all steps.");
  w.header("offgraph:requests_total", "counter", "Finished generation requests by endpoint and finish reason.");
  for (const auto& [key, n] : m.requests())
    w.sample("offgraph:requests_total", static_cast<double>(n),
             "endpoint=\"" + escape_label(key.first) + "\",finish_reason=\"" + escape_label(key.second) + "\"");
  w.header("offgraph:http_responses_total", "counter", "HTTP responses by status code.");
  for (const auto& [status, n] : m.http())
    w.sample("offgraph:http_responses_total", static_cast<double>(n), "code=\"" + std::to_string(status) + "\"");
  if (m.kv_events) {
    const KvEventCounts k = m.kv_events();
    w.counter("offgraph:kv_events_published_total", static_cast<double>(k.published),
              "KV-cache events published (--kv-events-endpoint).");
    w.counter("offgraph:kv_events_dropped_total", static_cast<double>(k.dropped),
              "KV-cache events dropped because the publisher's queue was full.");
  }
  vllm_metrics(w, s, m);
  histograms(w, m, "offgraph:");
  return std::move(w.out());
}

}  // namespace og::server
