// Prometheus text rendering: vLLM's gauge names, offgraph counters, cumulative
// histogram buckets, label escaping, and every sample line well formed.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "server/metrics.h"

namespace og::server {
namespace {

// The value of the sample line starting with `prefix` (NaN when absent).
double sample(const std::string& text, const std::string& prefix) {
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line))
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
  return std::nan("");
}

TEST(Metrics, GaugesCountersHistograms) {
  SchedulerSnapshot s;
  s.waiting = 3;
  s.running = 2;
  s.kv_cache_usage = 0.375;
  s.prompt_tokens = 100;
  s.generated_tokens = 40;
  s.prefix_lookups = 5;
  s.prefix_hits = 4;
  s.prefix_hit_tokens = 64;
  s.prefix_disk_hits = 2;
  s.prefix_disk_hit_tokens = 48;
  s.prefix_disk_writes = 7;
  s.prefix_disk_bytes = 3000;
  ServerMetrics m;
  m.ttft_s.observe(0.004);
  m.ttft_s.observe(0.2);
  m.ttft_s.observe(1000);
  m.count_request("chat", "stop");
  m.count_request("chat", "stop");
  m.count_request("completion", "cancelled");
  m.count_http(200);
  const std::string t = render_prometheus(s, m, "my \"model\"");
  const std::string lbl = "{model_name=\"my \\\"model\\\"\"";
  EXPECT_EQ(sample(t, "vllm:num_requests_waiting" + lbl + "}"), 3);
  EXPECT_EQ(sample(t, "vllm:num_requests_running" + lbl + "}"), 2);
  EXPECT_EQ(sample(t, "vllm:kv_cache_usage_perc" + lbl + "}"), 0.375);
  EXPECT_EQ(sample(t, "offgraph:prompt_tokens_total" + lbl + "}"), 100);
  EXPECT_EQ(sample(t, "offgraph:generation_tokens_total" + lbl + "}"), 40);
  EXPECT_EQ(sample(t, "offgraph:prefix_cache_queries_total" + lbl + "}"), 5);
  EXPECT_EQ(sample(t, "offgraph:prefix_cache_hits_total" + lbl + "}"), 4);
  EXPECT_EQ(sample(t, "offgraph:prefix_cache_disk_hits_total" + lbl + "}"), 2);
  EXPECT_EQ(sample(t, "offgraph:prefix_cache_disk_hit_tokens_total" + lbl + "}"), 48);
  EXPECT_EQ(sample(t, "offgraph:prefix_cache_disk_writes_total" + lbl + "}"), 7);
  EXPECT_EQ(sample(t, "offgraph:prefix_cache_disk_bytes" + lbl + "}"), 3000);
  EXPECT_EQ(sample(t, "offgraph:requests_total" + lbl + ",endpoint=\"chat\",finish_reason=\"stop\"}"), 2);
  EXPECT_EQ(sample(t, "offgraph:requests_total" + lbl + ",endpoint=\"completion\",finish_reason=\"cancelled\"}"), 1);
  EXPECT_EQ(sample(t, "offgraph:http_responses_total" + lbl + ",code=\"200\"}"), 1);
  const std::string h = "offgraph:time_to_first_token_seconds";
  EXPECT_EQ(sample(t, h + "_bucket" + lbl + ",le=\"0.001\"}"), 0);
  EXPECT_EQ(sample(t, h + "_bucket" + lbl + ",le=\"0.005\"}"), 1);
  EXPECT_EQ(sample(t, h + "_bucket" + lbl + ",le=\"0.25\"}"), 2);
  EXPECT_EQ(sample(t, h + "_bucket" + lbl + ",le=\"160\"}"), 2);
  EXPECT_EQ(sample(t, h + "_bucket" + lbl + ",le=\"+Inf\"}"), 3);
  EXPECT_EQ(sample(t, h + "_count" + lbl + "}"), 3);
  EXPECT_NEAR(sample(t, h + "_sum" + lbl + "}"), 1000.204, 1e-9);
  for (const char* name : {"offgraph:inter_token_latency_seconds", "offgraph:e2e_request_latency_seconds",
                           "offgraph:request_queue_time_seconds"})
    EXPECT_NE(t.find(std::string("# TYPE ") + name + " histogram"), std::string::npos) << name;
  EXPECT_NE(t.find("# TYPE vllm:num_requests_waiting gauge"), std::string::npos);
  EXPECT_NE(t.find("# TYPE offgraph:prompt_tokens_total counter"), std::string::npos);
}

TEST(Metrics, EveryLineIsWellFormed) {
  ServerMetrics m;
  m.inter_token_s.observe(0.01);
  m.count_request("chat", "length");
  const std::string t = render_prometheus(SchedulerSnapshot{}, m, "x\\y\nz");
  const std::regex sample_re(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*\{([a-z_]+="([^"\\]|\\.)*",?)+\} ([-+0-9.eE]+|\+Inf|NaN)$)");
  const std::regex comment_re(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::istringstream is(t);
  std::string line;
  int n = 0;
  while (std::getline(is, line)) {
    ++n;
    EXPECT_TRUE(std::regex_match(line, sample_re) || std::regex_match(line, comment_re)) << line;
  }
  EXPECT_GT(n, 50);
  EXPECT_EQ(t.back(), '\n');
  EXPECT_NE(t.find("model_name=\"x\\\\y\\nz\""), std::string::npos);
}

// The series vLLM's exporter has, as llm-d's endpoint picker and vLLM's
// dashboards read them: prefix cache queries and hits in tokens, the cache's
// configuration as labels, preemptions (none), successes by finish reason,
// and the latency histograms under vLLM's names (the offgraph: ones kept).
TEST(Metrics, VllmNamedSeries) {
  SchedulerSnapshot s;
  s.prefix_lookups = 3;
  s.prefix_query_tokens = 300;
  s.prefix_hit_tokens = 128;
  s.prompt_tokens = 300;
  s.generated_tokens = 20;
  s.block_size = 16;
  s.num_blocks = 512;
  s.cache_dtype = "bf16";
  s.prefix_caching = true;
  ServerMetrics m;
  m.ttft_s.observe(0.02);
  m.inter_token_s.observe(0.01);
  m.count_request("chat", "stop");
  m.count_request("completion", "stop");
  m.count_request("chat", "length");
  m.count_request("chat", "cancelled");
  const std::string t = render_prometheus(s, m, "m");
  const std::string lbl = "{model_name=\"m\"";
  EXPECT_EQ(sample(t, "vllm:prefix_cache_queries_total" + lbl + "}"), 300);
  EXPECT_EQ(sample(t, "vllm:prefix_cache_hits_total" + lbl + "}"), 128);
  EXPECT_EQ(sample(t, "vllm:num_preemptions_total" + lbl + "}"), 0);
  EXPECT_EQ(sample(t, "vllm:prompt_tokens_total" + lbl + "}"), 300);
  EXPECT_EQ(sample(t, "vllm:generation_tokens_total" + lbl + "}"), 20);
  EXPECT_EQ(sample(t, "vllm:cache_config_info" + lbl +
                          ",block_size=\"16\",num_gpu_blocks=\"512\",cache_dtype=\"bf16\",enable_prefix_caching=\"True\"}"),
            1);
  EXPECT_EQ(sample(t, "vllm:request_success_total" + lbl + ",finished_reason=\"stop\"}"), 2);
  EXPECT_EQ(sample(t, "vllm:request_success_total" + lbl + ",finished_reason=\"length\"}"), 1);
  EXPECT_TRUE(std::isnan(sample(t, "vllm:request_success_total" + lbl + ",finished_reason=\"cancelled\"}")));
  EXPECT_EQ(sample(t, "vllm:time_to_first_token_seconds_count" + lbl + "}"), 1);
  EXPECT_EQ(sample(t, "vllm:inter_token_latency_seconds_count" + lbl + "}"), 1);
  EXPECT_EQ(sample(t, "vllm:e2e_request_latency_seconds_count" + lbl + "}"), 0);
  EXPECT_EQ(sample(t, "vllm:request_queue_time_seconds_count" + lbl + "}"), 0);
  EXPECT_EQ(sample(t, "offgraph:time_to_first_token_seconds_count" + lbl + "}"), 1);
}

TEST(Metrics, UsageIsClampedToUnitRange) {
  SchedulerSnapshot s;
  s.kv_cache_usage = 1.5;
  const std::string t = render_prometheus(s, ServerMetrics{}, "m");
  EXPECT_EQ(sample(t, "vllm:kv_cache_usage_perc{model_name=\"m\"}"), 1.0);
}

}  // namespace
}  // namespace og::server

namespace og::server {
namespace {

// serve --spec ngram: vLLM's spec_decode counters, the per-position series summing to the accepted tokens.
TEST(Metrics, SpecDecodeCounters) {
  SchedulerSnapshot s;
  s.spec_drafts = 7;
  s.spec_draft_tokens = 25;
  s.spec_accepted_tokens = 11;
  s.spec_accepted_per_pos = {6, 4, 1};
  ServerMetrics m;
  const std::string text = render_prometheus(s, m, "m");
  EXPECT_NE(text.find("# TYPE vllm:spec_decode_num_drafts_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:spec_decode_num_drafts_total{model_name=\"m\"} 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("vllm:spec_decode_num_draft_tokens_total{model_name=\"m\"} 25\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 11\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",position=\"0\"} 6\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",position=\"2\"} 1\n"),
            std::string::npos);
  // Without speculation the counters are there, at 0, and no position series.
  const std::string plain = render_prometheus(SchedulerSnapshot{}, m, "m");
  EXPECT_NE(plain.find("vllm:spec_decode_num_drafts_total{model_name=\"m\"} 0\n"), std::string::npos);
  EXPECT_EQ(plain.find("position=\""), std::string::npos);
}

}  // namespace
}  // namespace og::server
