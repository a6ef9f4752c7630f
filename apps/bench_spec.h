// `offgraph bench`'s speculative decoding rows: the cost of verify steps of
// k draft tokens against one decode step (--spec-verify), and a greedy
// generation from a real prompt with and without a proposer (--spec ngram or
// --model-draft, with --spec-prompt): tok/s, acceptance and tokens per target
// forward beside the plain row. Random-weight models accept nothing
// meaningful: their acceptance rows say nothing about real text.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/flags.h"
#include "model/model.h"
#include "runtime/bench.h"
#include "spec_flags.h"

namespace og::app {

struct BenchSpecFlags {
  std::vector<int64_t> verify_k;  // --spec-verify: draft lengths to time (0 = the plain decode step)
  SpecFlags spec;                 // --spec / --model-draft / --draft-max ...
  std::string prompt;             // --spec-prompt TEXT
  std::string prompt_file;        // --spec-prompt-file PATH
};

void add_bench_spec_flags(Flags& fl, BenchSpecFlags& f);
// Usage errors of the combination; true when any speculative row was asked for.
bool check_bench_spec_flags(const Flags& fl, const BenchSpecFlags& f);

struct BenchSpecContext {
  std::string model_path;
  const Model* model = nullptr;
  BenchCacheOptions cache;
  int64_t depth = 0, n_gen = 128, repetitions = 1, seed = 1;
  bool json = false;
};

// Runs the rows, printing a markdown table unless ctx.json; returns them as JSON.
nlohmann::json run_bench_spec(const BenchSpecFlags& f, const BenchSpecContext& ctx);

}  // namespace og::app
