// The run-configuration builder (run_builder.h).
#include "runtime/run_builder.h"

#include <filesystem>
#include <system_error>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "chat/jinja_chat.h"

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
  r.loaded.tmpl = choose_chat_template(c.model, r.loaded.model_template, *r.loaded.tok, &r.warning);
  r.loaded.stop_ids = chat_stop_ids(*r.loaded.tmpl, *r.loaded.tok);
  r.cache = c.cache;
  kv_kind_of(r.cache);  // an unknown kind fails before the cache is built
  std::string policy_warning;
  r.policy = kv_policy_of(r.cache, *r.loaded.model, &policy_warning);
  if (!policy_warning.empty()) r.warning += (r.warning.empty() ? "" : "; ") + policy_warning;
  return r;
}

std::unique_ptr<ChatFormat> choose_chat_template(const ModelSetup& s, const std::optional<std::string>& model_template,
                                                   const Tokenizer& tok, std::string* warning) {
  if (!s.chat_template_file.empty()) {
    check_path_exists(s.chat_template_file, "--chat-template-file");
    MappedFile f = MappedFile::open(s.chat_template_file);
    std::string src(reinterpret_cast<const char*>(f.data()), f.size());
    return std::make_unique<JinjaChatTemplate>(std::move(src), jinja_options_of(tok), s.chat_template_file);
  }
  if (s.chat != "auto" || !model_template || model_template->find_first_not_of(" \t\r\n") == std::string::npos)
    return make_chat_template(s.chat, model_template);
  try {
    return std::make_unique<JinjaChatTemplate>(*model_template, jinja_options_of(tok), "the model's");
  } catch (const Error& e) {
    // The built-in of the same format, if there is one, rather than no chat at all.
    auto built_in = make_chat_template("auto", model_template);
    if (warning)
      *warning = std::string(e.what()) + "; using the built-in " + built_in->name() + " template instead";
    return built_in;
  }
}

std::unique_ptr<Model> open_model(const ModelSetup& s) {
  check_model_paths(s);
  LoadOptions opts;
  opts.mmap_only = s.mmap;
  opts.experts_in_memory = s.experts_in_memory;
  return Model::load(s.model, opts);
}

}  // namespace og
