// What `offgraph export` and `offgraph quantize` share: the flags of a
// conversion, the progress lines on stderr, the summary.
#pragma once

#include <functional>
#include <string>

#include "base/flags.h"
#include "model/gguf_convert.h"

namespace og::app {

struct ConvertFlags {
  std::string dtype;
  bool force = false;
  bool no_progress = false;
  int64_t threads = 0;
  int64_t prefill_chunk_size = 0;
};

// --force, --threads, --prefill-chunk-size, --no-progress (-q/--quiet is every command's).
void add_convert_flags(Flags& fl, ConvertFlags& f);
// Resolves the weight type (UsageError naming it when unknown), applies
// --threads, and fills the options. Progress goes to stderr when diagnostics
// are on and not --no-progress: one line updated in place on a terminal (done
// / total tensors, bytes, rate, time left), a plain line per tensor in a pipe.
// A SIGINT/SIGTERM stops the conversion before the next tensor.
ConvertOptions convert_options_of(const ConvertFlags& f);
// Runs a conversion writing `out_path` with SIGINT/SIGTERM handled: an
// interrupted one removes its partial file, says so and returns 130/143;
// otherwise prints the summary and returns 0.
int run_conversion(const std::function<ConvertSummary()>& convert, const std::string& out_path);
// "[summary] ..." lines on stderr.
void print_summary(const ConvertSummary& s, const std::string& out_path);

}  // namespace og::app
