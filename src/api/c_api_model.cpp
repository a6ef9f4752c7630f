// The C API (offgraph.h): version, errors, the handle registry, memory handed
// to the caller, and the model, tokenizer and chat-template calls.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <unordered_map>

#include "api/c_api_internal.h"
#include "chat/chat_request.h"
#include "chat/chat_template.h"
#include "chat/request_error.h"
#include "model/config.h"
#include "runtime/generation_limits.h"
#include "runtime/token_ids.h"

namespace og::capi {

namespace {
thread_local std::string t_error;

std::unordered_map<const void*, Kind>& registry() {
  static auto* r = new std::unordered_map<const void*, Kind>();  // never destroyed: handles may outlive statics
  return *r;
}
}  // namespace

og_status set_error(og_status status, const std::string& message) {
  t_error = message;
  return status;
}

std::mutex& registry_mutex() {
  static auto* mu = new std::mutex();
  return *mu;
}

void register_handle(const void* h, Kind k) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[h] = k;
}

bool is_live_locked(const void* h, Kind k) {
  auto it = registry().find(h);
  return it != registry().end() && it->second == k;
}

void unregister_locked(const void* h) { registry().erase(h); }

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kModel: return "model";
    case Kind::kSession: return "session";
    case Kind::kEngine: return "engine";
  }
  return "handle";
}

std::shared_ptr<ModelCore> model_core(const og_model* m) {
  if (!m) api_fail(OG_ERR_INVALID_HANDLE, "the model handle is NULL");
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (!is_live_locked(m, Kind::kModel))
    api_fail(OG_ERR_INVALID_HANDLE, "the model handle is closed or not a model");
  return m->core;
}

void need_generating(const ModelCore& core) {
  if (!core.run.model().config().causal)
    api_fail(OG_ERR_INVALID_ARGUMENT, "the model ", core.run.model().source_path(),
             " only embeds (bidirectional attention), so it cannot generate: use og_embed");
}

void need(const void* p, const char* name) {
  if (!p) api_fail(OG_ERR_INVALID_ARGUMENT, name, " is NULL");
}

// runtime/token_ids.h's check and words, as every edge (so Python's too).
void check_ids(const int32_t* ids, size_t n, int32_t n_vocab, const char* what) {
  if (n > 0) need(ids, what);
  if (n == 0) return;
  if (const auto bad = first_bad_token_id(std::span<const int32_t>(ids, n), n_vocab))
    api_fail(OG_ERR_OUT_OF_RANGE, what, "[", bad->index, "]: ", bad->message);
}

std::unique_ptr<KvCache> cache_of(const CacheSetup& setup, const Model& model, const KvPolicy& policy,
                                  const char* lower) {
  try {
    return make_cache(setup, model, policy);
  } catch (const Error& e) {
    if (std::string_view(e.what()).rfind("out of memory", 0) != 0) throw;
    api_fail(OG_ERR_RUNTIME, "out of memory allocating the KV cache (", setup.kind, ", capacity ", policy.max_capacity,
             ", initial ", policy.initial_capacity, ", rows per step ", policy.max_write, ", sequences ",
             policy.max_sequences, "): lower ", lower);
  }
}

og_string make_string(const std::string& s) {
  og_string out{static_cast<char*>(std::malloc(s.size() + 1)), s.size()};
  if (!out.data) throw std::bad_alloc();
  std::memcpy(out.data, s.data(), s.size());
  out.data[s.size()] = '\0';
  return out;
}

og_tokens make_tokens(const std::vector<int32_t>& ids) {
  og_tokens out{static_cast<int32_t*>(std::malloc(std::max<size_t>(1, ids.size()) * sizeof(int32_t))), ids.size()};
  if (!out.ids) throw std::bad_alloc();
  if (!ids.empty()) std::memcpy(out.ids, ids.data(), ids.size() * sizeof(int32_t));
  return out;
}

namespace {

// The option fields check_generation_settings() reports, as a C program spells them.
std::string c_field_name(const LimitViolation& v) {
  switch (v.field) {
    case LimitField::kMaxTokens: return "max_new_tokens";
    case LimitField::kTopLogprobs: return "top_logprobs";
    case LimitField::kStop: return v.index >= 0 ? "stop_strings[" + std::to_string(v.index) + "]" : "stop_strings";
    case LimitField::kRepeatPenalty: return "sampler.repeat_penalty";
    default: return std::string("sampler.") + limit_field_name(v.field);
  }
}

// The first mistake, as OG_ERR_INVALID_ARGUMENT naming the option field: the
// bounds and words are those of the server and the commands.
void enforce_limits(const GenerationSettings& s) {
  const auto found = check_generation_settings(s);
  if (!found.empty()) api_fail(OG_ERR_INVALID_ARGUMENT, describe_violation(found.front(), c_field_name(found.front())));
}

GenerationSettings settings_of(const og_sampler_options& o) {
  GenerationSettings s;
  s.temperature = o.temperature;
  s.top_k = o.top_k;
  s.top_p = o.top_p;
  s.min_p = o.min_p;
  s.repeat_penalty = o.repeat_penalty;
  s.repeat_last_n = o.repeat_last_n;
  s.presence_penalty = o.presence_penalty;
  s.frequency_penalty = o.frequency_penalty;
  return s;
}

}  // namespace

SamplerConfig sampler_config_of(const og_sampler_options& o) {
  enforce_limits(settings_of(o));
  // -1 = random: the C API's and the commands' rule (the server takes any 64-bit seed as is).
  if (o.seed < -1) api_fail(OG_ERR_INVALID_ARGUMENT, "sampler.seed ", o.seed, " is outside [-1, 2^63 - 1]");
  SamplerConfig c;
  c.temperature = o.temperature;
  c.top_k = std::max(o.top_k, 0);  // -1 = off, as 0
  c.top_p = o.top_p;
  c.min_p = o.min_p;
  c.repeat_penalty = o.repeat_penalty;
  c.repeat_last_n = o.repeat_last_n;
  c.presence_penalty = o.presence_penalty;
  c.frequency_penalty = o.frequency_penalty;
  c.seed = resolve_seed(o.seed);
  return c;
}

void check_generate_options(const og_generate_options& o) {
  if (o.n_stop_strings > 0) need(o.stop_strings, "stop_strings");
  GenerationSettings s = settings_of(o.sampler);
  s.max_tokens = o.max_new_tokens;
  s.top_logprobs = o.top_logprobs;
  for (size_t i = 0; i < o.n_stop_strings; ++i) {
    if (!o.stop_strings[i]) api_fail(OG_ERR_INVALID_ARGUMENT, "stop_strings[", i, "] is NULL");
    s.stop.emplace_back(o.stop_strings[i]);
  }
  enforce_limits(s);
  sampler_config_of(o.sampler);
}

namespace {

ChatRequest request_of(const og_chat_message* messages, size_t n) {
  if (n > 0) need(messages, "messages");
  ChatRequest r;
  for (size_t i = 0; i < n; ++i) {
    if (!messages[i].role || !messages[i].content)
      api_fail(OG_ERR_INVALID_ARGUMENT, "messages[", i, "] has a NULL role or content");
    const std::string role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant")
      api_fail(OG_ERR_INVALID_ARGUMENT, "messages[", i, "].role \"", role,
               "\" is not one of system, user, assistant");
    ChatRequestMessage m;
    m.role = role;
    m.content = std::string(messages[i].content);
    r.messages.push_back(std::move(m));
  }
  return r;
}

// The conversation rendered as og_session_chat renders a request of these
// messages (chat/chat_request.h render_chat on the model's chat setup), so
// the ids og_chat_encode gives are the prompt og_session_chat prefills.
ChatSegments render_messages(const std::shared_ptr<ModelCore>& core, const og_chat_message* messages, size_t n,
                             int add_generation_prompt) {
  const ChatRenderForms forms = render_forms(request_of(messages, n));
  ChatPlanInput in;
  in.messages = &forms.messages;
  in.template_request = &forms.template_request;
  in.needs_jinja = forms.needs_jinja;
  in.add_generation_prompt = add_generation_prompt != 0;
  try {
    return render_chat(in, *chat_setup_of(core));
  } catch (const ChatRequestError& e) {
    api_fail(OG_ERR_INVALID_ARGUMENT, e.what());
  }
}

}  // namespace

}  // namespace og::capi

using namespace og;
using namespace og::capi;

extern "C" {

const char* og_version(void) { return OG_VERSION_STRING; }

const char* og_last_error(void) { return t_error.c_str(); }

const char* og_status_name(og_status status) {
  switch (status) {
    case OG_OK: return "ok";
    case OG_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case OG_ERR_INVALID_HANDLE: return "invalid_handle";
    case OG_ERR_OUT_OF_RANGE: return "out_of_range";
    case OG_ERR_BUSY: return "busy";
    case OG_ERR_STATE: return "state";
    case OG_ERR_CAPACITY: return "capacity";
    case OG_ERR_RUNTIME: return "runtime";
    case OG_ERR_CANCELLED: return "cancelled";
  }
  return "unknown";
}

void og_string_free(og_string* s) {
  if (!s) return;
  std::free(s->data);
  s->data = nullptr;
  s->len = 0;
}

void og_tokens_free(og_tokens* t) {
  if (!t) return;
  std::free(t->ids);
  t->ids = nullptr;
  t->n = 0;
}

void og_model_options_init(og_model_options* opts) {
  if (opts) *opts = og_model_options{sizeof(og_model_options), nullptr, nullptr, 0, 0, 0};
}

og_status og_model_open(const char* path, const og_model_options* opts, og_model** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    need(path, "path");
    og_model_options o;
    og_model_options_init(&o);
    read_options(opts, &o, "og_model_options");
    if (o.threads < 0 || o.threads > 1024)
      api_fail(OG_ERR_INVALID_ARGUMENT, "threads ", o.threads, " is outside [0, 1024]");
    RunConfig c;
    c.model.model = path;
    if (o.tokenizer) c.model.tokenizer = o.tokenizer;
    if (o.chat_template) c.model.chat = o.chat_template;
    c.model.mmap = o.mmap != 0;
    c.model.experts_in_memory = o.experts_in_memory != 0;
    if (o.mmproj) c.model.mmproj = o.mmproj;
    c.model.no_mmproj = o.no_mmproj != 0;
    if (c.model.no_mmproj && !c.model.mmproj.empty())
      api_fail(OG_ERR_INVALID_ARGUMENT, "og_model_options.mmproj (", c.model.mmproj,
               ") and no_mmproj contradict each other: give one");
    c.threads = o.threads;
    if (c.model.model.empty()) api_fail(OG_ERR_INVALID_ARGUMENT, "path is empty");
    // A missing file is the caller's input; anything wrong inside one is OG_ERR_RUNTIME.
    std::error_code ec;
    if (!std::filesystem::exists(c.model.model, ec))
      api_fail(OG_ERR_INVALID_ARGUMENT, c.model.model, ": no such file or directory");
    if (!c.model.tokenizer.empty() && !std::filesystem::exists(c.model.tokenizer, ec))
      api_fail(OG_ERR_INVALID_ARGUMENT, c.model.tokenizer, ": no such file or directory (tokenizer)");
    if (!c.model.mmproj.empty() && !std::filesystem::exists(c.model.mmproj, ec))
      api_fail(OG_ERR_INVALID_ARGUMENT, c.model.mmproj, ": no such file or directory (mmproj)");
    if (c.model.chat != "auto") {
      try {
        make_chat_template(c.model.chat, std::nullopt);  // an unknown name fails before the load
      } catch (const Error&) {
        // Said in the API's own terms (the chat code's message names the command's flag).
        std::string known = "auto";
        for (const std::string& n : chat_template_names()) known += ", " + n;
        api_fail(OG_ERR_INVALID_ARGUMENT, "chat_template \"", c.model.chat, "\" is not a chat template (known: ",
                 known, ")");
      }
    }
    auto core = std::make_shared<ModelCore>();
    core->run = build_run(c);
    core->engine = std::make_unique<SerialEngine>(core->run.model());
    core->architecture = core->run.model().architecture();
    core->template_name = core->run.chat_template().name();
    core->tokenizer_kind = core->run.tokenizer().kind();
    const Pooling pooling = core->run.model().config().pooling;
    core->pooling = pooling == Pooling::kUnset ? "" : pooling_name(pooling);
    if (pooling != Pooling::kUnset && pooling != Pooling::kNone)
      core->embedder = std::make_unique<Embedder>(core->run.model());
    auto* m = new og_model{std::move(core)};
    register_handle(m, Kind::kModel);
    *out = m;
  });
}

og_status og_model_close(og_model* model) {
  if (!model) return OG_OK;
  return guarded([&] {
    {
      std::lock_guard<std::mutex> lock(registry_mutex());
      if (!is_live_locked(model, Kind::kModel))
        api_fail(OG_ERR_INVALID_HANDLE, "the model handle is closed or not a model");
      unregister_locked(model);
    }
    delete model;
  });
}

og_status og_model_get_info(const og_model* model, og_model_info* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    const ModelConfig& c = core->run.model().config();
    og_model_info i{};
    i.architecture = core->architecture.c_str();
    i.chat_template = core->template_name.c_str();
    i.tokenizer_kind = core->tokenizer_kind.c_str();
    i.n_vocab = core->n_vocab();
    i.n_ctx = c.n_ctx;
    i.d_model = c.d_model;
    i.n_layers = c.n_layers();
    if (!c.layers.empty()) {
      i.n_heads = c.layers[0].n_heads;
      i.n_kv_heads = c.layers[0].n_kv_heads;
      i.head_dim = c.layers[0].head_dim_k;
      i.d_ff = c.layers[0].d_ff;
    }
    i.n_kv_caches = static_cast<int32_t>(core->run.model().kv_geometry().caches.size());
    const WeightResidency r = core->run.model().weight_residency();
    i.weights_copied_bytes = r.copied_bytes;
    i.weights_mapped_expert_bytes = r.mapped_expert_bytes;
    i.generates = c.causal ? 1 : 0;
    i.embeds = core->embedder ? 1 : 0;
    i.embedding_dim = core->embedder ? core->embedder->dim() : 0;
    i.pooling = core->pooling.c_str();
    *out = i;
  });
}

og_status og_special_tokens(const og_model* model, og_special_ids* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    const SpecialTokens& s = core->tok().special();
    *out = og_special_ids{s.bos, s.eos, s.eot, s.pad, s.unk, s.add_bos ? 1 : 0};
  });
}

og_status og_stop_ids(const og_model* model, og_tokens* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    *out = make_tokens(core->run.loaded.stop_ids);
  });
}

og_status og_tokenize(const og_model* model, const char* text, size_t len, int add_special, int parse_special,
                      og_tokens* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    if (len > 0) need(text, "text");
    *out = make_tokens(core->tok().encode(std::string_view(text ? text : "", len), add_special != 0,
                                          parse_special != 0));
  });
}

og_status og_detokenize(const og_model* model, const int32_t* ids, size_t n, int skip_special, og_string* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    check_ids(ids, n, core->n_vocab(), "ids");
    *out = make_string(core->tok().decode(std::span<const int32_t>(ids, n), skip_special != 0));
  });
}

og_status og_token_piece(const og_model* model, int32_t id, const char** piece, size_t* len) {
  return guarded([&] {
    auto core = model_core(model);
    need(piece, "piece");
    need(len, "len");
    check_ids(&id, 1, core->n_vocab(), "id");
    const std::string& p = core->tok().piece(id);
    *piece = p.c_str();
    *len = p.size();
  });
}

og_status og_chat_render(const og_model* model, const og_chat_message* messages, size_t n,
                         int add_generation_prompt, og_string* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    *out = make_string(chat_text(render_messages(core, messages, n, add_generation_prompt)));
  });
}

og_status og_chat_encode(const og_model* model, const og_chat_message* messages, size_t n,
                         int add_generation_prompt, og_tokens* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    *out = make_tokens(encode_chat(core->tok(), render_messages(core, messages, n, add_generation_prompt), true));
  });
}

}  // extern "C"
