// The one run-configuration builder: every command (run, chat, batch, serve,
// bench) and the public API turn (model, options) into what a run needs here,
// so that the same option means the same thing, is checked the same way and
// fails with the same message everywhere. Plain structs in; nothing prints
// (warnings are returned for the caller to show).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kv/kv_cache.h"
#include "model/model.h"
#include "runtime/run_setup.h"

namespace og {

struct RunConfig {
  ModelSetup model;      // model path, tokenizer, chat template, mmap
  CacheSetup cache;      // cache kind, capacities, storage dtype, windows, chunk, sequences, block size
  int64_t threads = 0;   // forward-pass workers (the pool is process-wide); 0 = all cores
};

// A built run: the loaded model, tokenizer and template, and the cache policy.
struct Run {
  LoadedModel loaded;
  CacheSetup cache;      // as configured (make_cache builds from it)
  KvPolicy policy;       // resolved against the model
  std::string warning;   // for the caller to show ("" = none): capacity beyond the trained context, unused windows

  Model& model() const { return *loaded.model; }
  Tokenizer& tokenizer() const { return *loaded.tok; }
  ChatFormat& chat_template() const { return *loaded.tmpl; }
  // A fresh cache of `policy`; og::Error naming what sizes it when memory runs out.
  std::unique_ptr<KvCache> make_cache() const;
};

// og::Error "PATH: no such file or directory (FLAG)" when `path` does not exist.
void check_path_exists(const std::string& path, const char* flag);
// check_path_exists of --model and (when given) --tokenizer: before any work starts.
void check_model_paths(const ModelSetup& s);
// Sets the forward-pass pool's size; 0 keeps all cores.
void apply_threads(int64_t threads);
// Checks, applies the threads, loads and resolves the policy. og::Error on any bad input.
Run build_run(const RunConfig& c);
// Only the weights (bench, inspect): the path check and the mmap choice of `s`.
std::unique_ptr<Model> open_model(const ModelSetup& s);

// The chat template a run uses (--chat, --chat-template-file): a file's Jinja
// template; with "auto" the model's own Jinja template when it has one (a
// template our engine cannot parse falls back to the matching built-in, with
// *warning saying so), raw text when it has none; any other name a built-in.
std::unique_ptr<ChatFormat> choose_chat_template(const ModelSetup& s, const std::optional<std::string>& model_template,
                                                 const Tokenizer& tok, std::string* warning);

}  // namespace og
