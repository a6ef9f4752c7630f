// Flags, progress and summary of `offgraph export` / `offgraph quantize`.
#include "convert_common.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "base/timer.h"
#include "llm_common.h"
#include "runtime/run_builder.h"
#include "shared_flags.h"

namespace og::app {

namespace {
double mib(int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }
}  // namespace

void add_convert_flags(Flags& fl, ConvertFlags& f) {
  fl.add_bool("force", &f.force, "overwrite OUT when it exists");
  add_threads_flag(fl, &f.threads);
  fl.add_int("prefill-chunk-size", &f.prefill_chunk_size, 0, INT32_MAX,
             "the default prefill chunk stored as offgraph.kv.prefill_chunk_size; 0 = keep the source's, else 512");
  fl.add_bool("no-progress", &f.no_progress,
              "no progress on stderr (a terminal gets one updating line, a pipe one line per tensor)");
}

namespace {

std::string clock_text(double s) {
  const int64_t t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  return buf;
}

// Progress over the whole conversion: the bytes of the tensors done against
// all of them (known from the first report's count only, so by tensors).
struct ProgressLine {
  Timer wall;
  int64_t bytes_in = 0, bytes_out = 0;

  void update(const ConvertProgress& p) {
    if (interrupted()) fail("interrupted");  // stops before the next tensor; the partial file is removed
    bytes_in += p.bytes_in > 0 ? p.bytes_in : p.bytes_out;
    bytes_out += p.bytes_out;
    const double s = wall.seconds();
    const double rate = s > 0 ? mib(bytes_in) * 1.048576 / s : 0.0;
    const double left = p.index > 0 ? s * (p.count - p.index) / p.index : 0.0;
    std::fprintf(stderr, "\r\033[K[%d/%d] %.1f MiB -> %.1f MiB, %.1f MB/s, %s elapsed, about %s left", p.index,
                 p.count, mib(bytes_in), mib(bytes_out), rate, clock_text(s).c_str(), clock_text(left).c_str());
    if (p.index == p.count) std::fputc('\n', stderr);
    std::fflush(stderr);
  }
};

}  // namespace

ConvertOptions convert_options_of(const ConvertFlags& f) {
  ConvertOptions o;
  if (!weight_type_from_name(f.dtype, &o.type)) {
    std::string names;
    for (const std::string& n : weight_type_names()) names += (names.empty() ? "" : ", ") + n;
    usage_fail("unknown weight type '" + f.dtype + "' (expected one of " + names + ")");
  }
  apply_threads(f.threads);
  o.overwrite = f.force;
  o.prefill_chunk_size = f.prefill_chunk_size;
  const bool show = diagnostics_on() && !f.no_progress;
  if (show && isatty(STDERR_FILENO)) {
    auto line = std::make_shared<ProgressLine>();
    o.on_tensor = [line](const ConvertProgress& p) { line->update(p); };
  } else {
    o.on_tensor = [show](const ConvertProgress& p) {
      if (interrupted()) fail("interrupted");
      if (!show) return;
      const double in = p.bytes_in > 0 ? mib(p.bytes_in) : mib(p.bytes_out);
      std::fprintf(stderr, "[%*d/%d] %-28s %6s -> %-6s %9.2f MiB -> %9.2f MiB  %8.1f MB/s\n",
                   p.count >= 100 ? 3 : 2, p.index, p.count, p.name.c_str(), p.from.c_str(), p.to.c_str(), in,
                   mib(p.bytes_out), p.seconds > 0 ? in * 1.048576 / p.seconds : 0.0);
    };
  }
  return o;
}

int run_conversion(const std::function<ConvertSummary()>& convert, const std::string& out_path) {
  install_interrupt_handler(/*restart_reads=*/true);
  ConvertSummary s;
  try {
    s = convert();
  } catch (const Error&) {
    if (!interrupted()) throw;
    if (isatty(STDERR_FILENO)) std::fputc('\n', stderr);
    std::fprintf(stderr, "[interrupted: %s was not written]\n", out_path.c_str());
    return interrupted_exit_code();
  }
  print_summary(s, out_path);
  return 0;
}

void print_summary(const ConvertSummary& s, const std::string& out_path) {
  if (!diagnostics_on()) return;
  std::string by;
  for (const auto& [name, n] : s.dtype_counts) by += (by.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  std::fprintf(stderr, "[summary] wrote %s: %d tensors (%s)\n", out_path.c_str(), s.n_tensors, by.c_str());
  std::fprintf(stderr, "[summary] size %.2f MiB -> %.2f MiB, %.3f bits per weight, %.1f s (%.1f MB/s of source)\n",
               mib(s.bytes_in), mib(s.bytes_out), s.bits_per_weight(), s.seconds,
               s.seconds > 0 ? mib(s.bytes_in) * 1.048576 / s.seconds : 0.0);
  if (s.fallbacks > 0)
    std::fprintf(stderr, "[summary] %d tensor(s) whose rows are not whole blocks of the chosen type fell back\n",
                 s.fallbacks);
  for (const std::string& note : s.notes) std::fprintf(stderr, "[summary] note: %s\n", note.c_str());
}

}  // namespace og::app
