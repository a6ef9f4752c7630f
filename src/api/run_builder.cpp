// The run-configuration builder (run_builder.h).
#include "api/run_builder.h"

#include <filesystem>
#include <system_error>

#include "base/error.h"
#include "base/thread_pool.h"

namespace og {

void check_path_exists(const std::string& path, const char* flag) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, ": no such file or directory (", flag, ")");
}

void check_model_paths(const ModelSetup& s) {
  if (s.model.empty()) fail("no model given (--model)");
  check_path_exists(s.model, "--model");
  if (!s.tokenizer.empty()) check_path_exists(s.tokenizer, "--tokenizer");
}

void apply_threads(int64_t threads) {
  OG_CHECK(threads >= 0 && threads <= 1024, "--threads ", threads, " is outside [0, 1024]");
  if (threads > 0) set_num_threads(static_cast<int>(threads));
}

std::unique_ptr<KvCache> Run::make_cache() const { return og::make_cache(cache, *loaded.model, policy); }

Run build_run(const RunConfig& c) {
  check_model_paths(c.model);
  apply_threads(c.threads);
  Run r;
  r.loaded = load_model(c.model);
  r.cache = c.cache;
  kv_kind_of(r.cache);  // an unknown kind fails before the cache is built
  r.policy = kv_policy_of(r.cache, *r.loaded.model, &r.warning);
  return r;
}

std::unique_ptr<Model> open_model(const ModelSetup& s) {
  check_model_paths(s);
  LoadOptions opts;
  opts.mmap_only = s.mmap;
  return Model::load(s.model, opts);
}

}  // namespace og
