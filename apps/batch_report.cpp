// Per-generation lines and the run summary of `offgraph batch`.
#include "batch_report.h"

#include <cstdio>

#include "shared_flags.h"

#include "runtime/stats.h"

namespace og::app {

namespace {

double mib(int64_t bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

void BatchReport::generation(int64_t k, const RequestReport& r) {
  if (r.reason == FinishReason::kRefused || r.reason == FinishReason::kFailed) ++failed_;
  const double ms_per_token = r.generated_tokens > 1 ? r.decode_s * 1e3 / (r.generated_tokens - 1) : 0.0;
  {
    nlohmann::json g;
    g["generation"] = k;
    g["prompt_tokens"] = r.prompt_tokens;
    g["cached_prompt_tokens"] = r.cached_tokens;
    g["queue_ms"] = r.queue_s * 1e3;
    g["prefill_ms"] = r.prefill_s * 1e3;
    g["ttft_ms"] = r.ttft_s * 1e3;
    g["decode_ms_per_token"] = ms_per_token;
    g["generated_tokens"] = r.generated_tokens;
    g["finish_reason"] = finish_reason_name(r.reason);
    if (!r.message.empty()) g["message"] = r.message;
    generations_[k] = std::move(g);
  }
  if (json_) return;
  diag("[gen %lld] prompt %lld tokens (%lld reused), queue %.1f ms, prefill %.1f ms, ttft %.1f ms, decode "
               "%.2f ms/token, %lld tokens, finish: %s%s%s\n",
               static_cast<long long>(k), static_cast<long long>(r.prompt_tokens),
               static_cast<long long>(r.cached_tokens), r.queue_s * 1e3, r.prefill_s * 1e3, r.ttft_s * 1e3,
               ms_per_token, static_cast<long long>(r.generated_tokens), finish_reason_name(r.reason),
               r.message.empty() ? "" : " - ", r.message.c_str());
}

std::string BatchReport::finish(const SchedulerSnapshot& s, const std::vector<std::string>& warnings) {
  const double wall = wall_.seconds();
  const double mean_rows = s.steps > 0 ? static_cast<double>(s.rows) / s.steps : 0.0;
  // Aggregate decode: tokens of decode-only steps over those steps' wall time
  // (a verify step's rows are not all tokens: its accepted ones and one more are).
  const double agg = s.step_s_decode_only > 0 ? s.tokens_decode_only / s.step_s_decode_only : 0.0;
  {
    nlohmann::json j;
    j["generations"] = nlohmann::json::array();
    for (auto& [k, g] : generations_) j["generations"].push_back(g);
    nlohmann::json run;
    run["load_ms"] = load_s_ * 1e3;
    run["wall_ms"] = wall * 1e3;
    run["steps"] = {{"decode_only", s.steps_decode_only}, {"mixed", s.steps_mixed},
                    {"prefill_only", s.steps_prefill_only}};
    run["mean_rows_per_step"] = mean_rows;
    run["generated_tokens"] = s.generated_tokens;
    run["aggregate_decode_tok_s"] = agg;
    run["peak_concurrent_sessions"] = s.peak_running;
    run["prefix_cache"] = {{"lookups", s.prefix_lookups}, {"hits", s.prefix_hits},
                           {"hit_tokens", s.prefix_hit_tokens}, {"evictions", s.prefix_evictions},
                           {"entries", s.prefix_entries}, {"bytes", s.prefix_bytes},
                           {"disk_hits", s.prefix_disk_hits}, {"disk_hit_tokens", s.prefix_disk_hit_tokens},
                           {"disk_writes", s.prefix_disk_writes}};
    if (s.spec_drafts > 0)
      run["spec"] = {{"drafts", s.spec_drafts},
                     {"draft_tokens", s.spec_draft_tokens},
                     {"accepted_tokens", s.spec_accepted_tokens},
                     {"acceptance", static_cast<double>(s.spec_accepted_tokens) / s.spec_draft_tokens},
                     {"accepted_per_pos", s.spec_accepted_per_pos},
                     {"pauses", s.spec_pauses}};
    run["peak_cache_bytes"] = s.peak_cache_bytes;
    run["peak_rss_bytes"] = peak_rss_bytes();
    j["run"] = std::move(run);
    j["warnings"] = warnings;
    if (json_) return j.dump();
  }
  diag("[batch] wall %.1f ms (load %.1f ms), %lld generated tokens, aggregate decode %.1f tok/s\n",
               wall * 1e3, load_s_ * 1e3, static_cast<long long>(s.generated_tokens), agg);
  diag("[batch] steps: %lld decode-only, %lld mixed, %lld prefill-only; %.1f rows per step; peak %d "
               "concurrent sessions\n",
               static_cast<long long>(s.steps_decode_only), static_cast<long long>(s.steps_mixed),
               static_cast<long long>(s.steps_prefill_only), mean_rows, s.peak_running);
  diag("[batch] prefix cache: %lld lookups, %lld hits, %lld hit tokens, %lld evictions\n",
               static_cast<long long>(s.prefix_lookups), static_cast<long long>(s.prefix_hits),
               static_cast<long long>(s.prefix_hit_tokens), static_cast<long long>(s.prefix_evictions));
  if (s.prefix_disk_hits > 0 || s.prefix_disk_writes > 0)
    diag("[batch] prefix cache on disk: %lld lookups read %lld tokens from it, %lld blocks written\n",
         static_cast<long long>(s.prefix_disk_hits), static_cast<long long>(s.prefix_disk_hit_tokens),
         static_cast<long long>(s.prefix_disk_writes));
  if (s.spec_drafts > 0)
    diag("[batch] spec: %lld/%lld draft tokens accepted (%.1f %%) over %lld verify steps, %lld pauses\n",
         static_cast<long long>(s.spec_accepted_tokens), static_cast<long long>(s.spec_draft_tokens),
         100.0 * static_cast<double>(s.spec_accepted_tokens) / static_cast<double>(s.spec_draft_tokens),
         static_cast<long long>(s.spec_drafts), static_cast<long long>(s.spec_pauses));
  diag("[batch] peak cache memory %.2f MiB, peak rss %.1f MiB\n", mib(s.peak_cache_bytes), mib(peak_rss_bytes()));
  return "";
}

}  // namespace og::app
