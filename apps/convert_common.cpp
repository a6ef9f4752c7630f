// Flags, progress and summary of `offgraph export` / `offgraph quantize`.
#include "convert_common.h"

#include <cstdio>

#include "api/run_builder.h"
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
  fl.add_bool("quiet", &f.quiet, "no per-tensor progress lines");
}

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
  if (!f.quiet)
    o.on_tensor = [](const ConvertProgress& p) {
      const double in = p.bytes_in > 0 ? mib(p.bytes_in) : mib(p.bytes_out);
      std::fprintf(stderr, "[%*d/%d] %-28s %6s -> %-6s %9.2f MiB -> %9.2f MiB  %8.1f MB/s\n",
                   p.count >= 100 ? 3 : 2, p.index, p.count, p.name.c_str(), p.from.c_str(), p.to.c_str(), in,
                   mib(p.bytes_out), p.seconds > 0 ? in * 1.048576 / p.seconds : 0.0);
    };
  return o;
}

void print_summary(const ConvertSummary& s, const std::string& out_path) {
  std::string by;
  for (const auto& [name, n] : s.dtype_counts) by += (by.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  std::fprintf(stderr, "[summary] wrote %s: %d tensors (%s)\n", out_path.c_str(), s.n_tensors, by.c_str());
  std::fprintf(stderr, "[summary] size %.2f MiB -> %.2f MiB, %.3f bits per weight, %.1f s (%.1f MB/s of source)\n",
               mib(s.bytes_in), mib(s.bytes_out), s.bits_per_weight(), s.seconds,
               s.seconds > 0 ? mib(s.bytes_in) * 1.048576 / s.seconds : 0.0);
  if (s.fallbacks > 0)
    std::fprintf(stderr, "[summary] %d tensor(s) whose rows are not whole blocks of the chosen type fell back\n",
                 s.fallbacks);
}

}  // namespace og::app
