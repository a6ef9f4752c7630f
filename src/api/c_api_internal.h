// What the C API's files share (include/offgraph/offgraph.h): the structs
// behind the opaque handles, the registry of live handles that turns a null,
// freed or foreign pointer into OG_ERR_INVALID_HANDLE, the per-thread error
// message, and guarded(), which keeps every C++ exception on this side.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "base/error.h"
#include "offgraph/offgraph.h"
#include "runtime/embedder.h"
#include "runtime/engine.h"
#include "runtime/run_builder.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace og {
struct ChatSetup;  // chat/chat_request.h
}  // namespace og

namespace og::capi {

// An error with the status the C caller sees.
class ApiError : public Error {
 public:
  ApiError(og_status status, const std::string& message) : Error(message), status_(status) {}
  og_status status() const { return status_; }

 private:
  og_status status_;
};

template <class... A>
[[noreturn]] void api_fail(og_status status, const A&... a) {
  throw ApiError(status, cat(a...));
}

// Records the message for og_last_error() and returns `status`.
og_status set_error(og_status status, const std::string& message);

// Runs f(); any exception becomes a status and this thread's message.
template <class F>
og_status guarded(F&& f) noexcept {
  try {
    f();
    return OG_OK;
  } catch (const ApiError& e) {
    return set_error(e.status(), e.what());
  } catch (const Error& e) {
    return set_error(OG_ERR_RUNTIME, e.what());
  } catch (const std::bad_alloc&) {
    return set_error(OG_ERR_RUNTIME, "out of memory");
  } catch (const std::exception& e) {
    return set_error(OG_ERR_RUNTIME, e.what());
  } catch (...) {
    return set_error(OG_ERR_RUNTIME, "unknown error");
  }
}

// The forward pass of one model, one call at a time: sessions on different
// threads and engines share the process-wide worker pool.
class SerialEngine : public Engine {
 public:
  explicit SerialEngine(const Model& model) : inner_(model) {}
  int32_t n_vocab() const override { return inner_.n_vocab(); }
  KvGeometry kv_geometry() const override { return inner_.kv_geometry(); }
  KvResult forward(const Batch& batch, KvCache& cache, std::vector<float>& logits) override {
    std::lock_guard<std::mutex> lock(mu_);
    return inner_.forward(batch, cache, logits);
  }
  // Held by anything else that runs the model's forward pass (embeddings).
  std::mutex& mutex() { return mu_; }

 private:
  ModelEngine inner_;
  std::mutex mu_;
};

// A loaded model, shared by its handle, its sessions and its engines.
struct ModelCore {
  Run run;
  std::unique_ptr<SerialEngine> engine;
  std::unique_ptr<Embedder> embedder;  // set when the model embeds (a pooling type other than none)
  std::string architecture, template_name, tokenizer_kind, pooling;

  const Tokenizer& tok() const { return run.tokenizer(); }
  int32_t n_vocab() const { return run.tokenizer().n_vocab(); }
};

// OG_ERR_INVALID_ARGUMENT when the model cannot generate (it only embeds).
void need_generating(const ModelCore& core);

// Which struct a registered pointer is.
enum class Kind { kModel, kSession, kEngine };
void register_handle(const void* h, Kind k);
// Under the registry's lock: whether `h` is a live handle of kind `k`.
bool is_live_locked(const void* h, Kind k);
void unregister_locked(const void* h);
std::mutex& registry_mutex();
// "model", "session", "engine" for messages.
const char* kind_name(Kind k);

// The model of a live handle (OG_ERR_INVALID_HANDLE otherwise).
std::shared_ptr<ModelCore> model_core(const og_model* m);

// The model's chat setup (runtime/model_chat.h), built on first use and kept
// while the model lives (c_api_chat.cpp): og_session_chat, og_chat_render and
// og_chat_encode render through it.
std::shared_ptr<const ChatSetup> chat_setup_of(const std::shared_ptr<ModelCore>& core);

// The rule for an option struct's minimum struct_size, in one place: it is the
// size the struct had when it was first published (offsetof + sizeof of its last
// field then; ABI 2 for the structs of that header, the release that added it
// for later ones), and it never changes. A field appended later must NOT move
// it: a minimum of sizeof(T) refuses every program built against the older
// header (6562753 did that to og_engine_options / og_session_options until
// 1655532). So each line names a field, never sizeof(T); a new option struct
// adds its line here, and appending a field to one leaves its line as it is.
#define OG_FIELD_END(T, f) (offsetof(T, f) + sizeof(T::f))
template <class T>
struct FirstPublished;  // no definition: read_options of a struct without a line below does not compile
template <>
struct FirstPublished<og_model_options> {
  static constexpr size_t size = OG_FIELD_END(og_model_options, experts_in_memory);  // ABI 2
};
template <>
struct FirstPublished<og_embed_options> {
  static constexpr size_t size = OG_FIELD_END(og_embed_options, dimensions);  // ABI 2
};
template <>
struct FirstPublished<og_session_options> {
  static constexpr size_t size = OG_FIELD_END(og_session_options, prefill_chunk_size);  // ABI 2
};
template <>
struct FirstPublished<og_generate_options> {
  static constexpr size_t size = OG_FIELD_END(og_generate_options, top_logprobs);  // ABI 2
};
template <>
struct FirstPublished<og_engine_options> {
  static constexpr size_t size = OG_FIELD_END(og_engine_options, kv_dtype);  // ABI 2
};
template <>
struct FirstPublished<og_chat_request> {
  static constexpr size_t size = OG_FIELD_END(og_chat_request, reasoning_effort);  // c7d2795
};
template <>
struct FirstPublished<og_limits> {
  static constexpr size_t size = OG_FIELD_END(og_limits, schema_max_work);  // og_set_limits' first release
};

// Reads a caller's option struct over the defaults in *o (set by its *_init):
// the first in->struct_size bytes, so a program built against an older,
// shorter struct keeps the defaults of the fields it lacks. A struct_size of 0
// (not initialised), below FirstPublished<T>::size or above this library's (a
// newer header) is OG_ERR_INVALID_ARGUMENT naming `name`.
template <class T>
void read_options(const T* in, T* o, const char* name) {
  if (!in) return;
  const size_t min_size = FirstPublished<T>::size;
  const size_t n = in->struct_size;
  if (n == 0) api_fail(OG_ERR_INVALID_ARGUMENT, name, ".struct_size is 0: initialise the struct with ", name, "_init");
  if (n > sizeof(T))
    api_fail(OG_ERR_INVALID_ARGUMENT, name, ".struct_size ", n, " is larger than this library's (", sizeof(T),
             "): the program was built against a newer offgraph.h");
  if (n < min_size)
    api_fail(OG_ERR_INVALID_ARGUMENT, name, ".struct_size ", n, " is smaller than any offgraph.h's (", min_size,
             "): initialise the struct with ", name, "_init");
  std::memcpy(static_cast<void*>(o), in, n);
  o->struct_size = sizeof(T);
}

// Checks that `p` is not null ("NAME is NULL").
void need(const void* p, const char* name);
// Every id in [0, n_vocab): OG_ERR_OUT_OF_RANGE naming the first that is not.
void check_ids(const int32_t* ids, size_t n, int32_t n_vocab, const char* what);

// Copies into caller-owned memory (malloc, freed by og_*_free).
og_string make_string(const std::string& s);
og_tokens make_tokens(const std::vector<int32_t>& ids);

// make_cache, its out-of-memory message in the API's terms (`lower` names the
// options that size the cache) rather than the command's flags.
std::unique_ptr<KvCache> cache_of(const CacheSetup& setup, const Model& model, const KvPolicy& policy,
                                  const char* lower);

// The runtime's options from the C structs (OG_ERR_INVALID_ARGUMENT on a bad value).
SamplerConfig sampler_config_of(const og_sampler_options& o);
void check_generate_options(const og_generate_options& o);

}  // namespace og::capi

// The structs behind the handles.
struct og_model {
  std::shared_ptr<og::capi::ModelCore> core;
};
