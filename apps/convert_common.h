// What `offgraph export` and `offgraph quantize` share: the flags of a
// conversion, the progress lines on stderr, the summary.
#pragma once

#include <string>

#include "base/flags.h"
#include "model/gguf_convert.h"

namespace og::app {

struct ConvertFlags {
  std::string dtype;
  bool force = false;
  bool quiet = false;
  int64_t threads = 0;
  int64_t prefill_chunk_size = 0;
};

// --force, --threads, --quiet, --prefill-chunk-size.
void add_convert_flags(Flags& fl, ConvertFlags& f);
// Resolves the weight type (UsageError naming it when unknown), applies
// --threads, and fills the options; progress goes to stderr unless --quiet.
ConvertOptions convert_options_of(const ConvertFlags& f);
// "[summary] ..." lines on stderr.
void print_summary(const ConvertSummary& s, const std::string& out_path);

}  // namespace og::app
