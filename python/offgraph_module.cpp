// offgraph._offgraph: the pybind11 layer over the C API (offgraph.h) that the
// pure-Python package (python/offgraph/__init__.py) builds its classes on.
// Every call that computes releases the GIL; a failed C call raises the
// exception class of its status (offgraph._errors) with the C message.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "offgraph/offgraph.h"
// The bounds' one home (constants only: nothing of it is linked).
#include "../src/runtime/generation_limits.h"

namespace py = pybind11;

namespace {

[[noreturn]] void raise(og_status s, const char* message) {
  const char* name = "Error";
  switch (s) {
    case OG_ERR_INVALID_ARGUMENT: name = "InvalidArgumentError"; break;
    case OG_ERR_INVALID_HANDLE: name = "ClosedError"; break;
    case OG_ERR_OUT_OF_RANGE: name = "OutOfRangeError"; break;
    case OG_ERR_BUSY: name = "BusyError"; break;
    case OG_ERR_STATE: name = "StateError"; break;
    case OG_ERR_CAPACITY: name = "CapacityError"; break;
    case OG_ERR_CANCELLED: name = "CancelledError"; break;
    default: break;
  }
  py::object cls = py::module_::import("offgraph._errors").attr(name);
  PyErr_SetString(cls.ptr(), message);
  throw py::error_already_set();
}

[[noreturn]] void raise(og_status s) { raise(s, og_last_error()); }

void check(og_status s) {
  if (s != OG_OK) raise(s);
}

// A status from a call made without the GIL: the message is per thread, and this is the same thread.
void check_nogil(og_status s) { check(s); }

// og_limits' fields by the names Python's keywords use (the C field names).
const std::pair<const char*, int64_t og_limits::*> kLimitFields[] = {
    {"template_max_work", &og_limits::template_max_work},
    {"template_max_ms", &og_limits::template_max_ms},
    {"template_max_value_bytes", &og_limits::template_max_value_bytes},
    {"template_max_memory_bytes", &og_limits::template_max_memory_bytes},
    {"schema_max_properties", &og_limits::schema_max_properties},
    {"schema_max_branches", &og_limits::schema_max_branches},
    {"schema_max_enum_values", &og_limits::schema_max_enum_values},
    {"schema_max_work", &og_limits::schema_max_work},
};

[[noreturn]] void raise_closed(const char* what) {
  py::object cls = py::module_::import("offgraph._errors").attr("ClosedError");
  PyErr_SetString(cls.ptr(), (std::string("the ") + what + " is closed").c_str());
  throw py::error_already_set();
}

py::bytes take_bytes(og_string s) {
  py::bytes b(s.data ? s.data : "", s.len);
  og_string_free(&s);
  return b;
}

std::vector<int32_t> take_ids(og_tokens t) {
  std::vector<int32_t> v(t.ids, t.ids + t.n);
  og_tokens_free(&t);
  return v;
}

std::vector<og_chat_message> c_messages(const std::vector<std::pair<std::string, std::string>>& m) {
  std::vector<og_chat_message> out;
  for (const auto& [role, content] : m) out.push_back({role.c_str(), content.c_str()});
  return out;
}

// Generation options; the strings live in `stops`.
struct GenOpts {
  og_generate_options o{};
  std::vector<std::string> stops;
  std::vector<const char*> stop_ptrs;

  GenOpts(int64_t max_new_tokens, double temperature, int top_k, double top_p, double min_p, double repeat_penalty,
          int repeat_last_n, double presence_penalty, double frequency_penalty, int64_t seed,
          std::vector<std::string> stop, bool stop_at_eos, bool logprobs, int top_logprobs)
      : stops(std::move(stop)) {
    og_generate_options_init(&o);
    o.max_new_tokens = max_new_tokens;
    o.sampler = og_sampler_options{temperature,     top_k, top_p, min_p, repeat_penalty, repeat_last_n,
                                   presence_penalty, frequency_penalty, seed};
    for (const std::string& s : stops) stop_ptrs.push_back(s.c_str());
    o.stop_strings = stop_ptrs.data();
    o.n_stop_strings = stop_ptrs.size();
    o.stop_at_model_stop_ids = stop_at_eos ? 1 : 0;
    o.logprobs = logprobs ? 1 : 0;
    o.top_logprobs = top_logprobs;
  }
};

// A chat request from the Python package's normalized tuples (python/offgraph/_chat.py),
// held as the C structs of og_chat_request pointing into its own strings.
using PyCall = std::tuple<std::string, std::string, std::string>;  // id, name, arguments
using PyMsg = std::tuple<std::string, std::optional<std::string>, std::optional<std::string>,
                         std::optional<std::string>, std::vector<PyCall>, std::optional<std::string>>;
using PyTool = std::tuple<std::string, std::optional<std::string>, std::string, bool>;
using PyImage = std::tuple<size_t, size_t, py::bytes>;  // message, offset in its content, the encoded bytes
struct ChatReq {
  std::vector<PyMsg> msgs;
  std::vector<PyTool> tools;
  std::vector<std::string> image_bytes;
  std::vector<og_chat_image> c_images;
  std::optional<std::string> tool_choice, response_format, json_schema, grammar, kwargs, effort;
  std::vector<std::vector<og_chat_tool_call>> calls;
  std::vector<og_chat_msg> c_msgs;
  std::vector<og_chat_tool> c_tools;
  og_chat_request q{};

  ChatReq(std::vector<PyMsg> m, std::vector<PyTool> t, std::optional<std::string> choice, bool parallel,
          std::optional<std::string> format, std::optional<std::string> schema, bool strict,
          std::optional<std::string> gbnf, int64_t max_reasoning, std::optional<std::string> kw,
          std::optional<std::string> reasoning_effort, const std::vector<PyImage>& images)
      : msgs(std::move(m)), tools(std::move(t)), tool_choice(std::move(choice)), response_format(std::move(format)),
        json_schema(std::move(schema)), grammar(std::move(gbnf)), kwargs(std::move(kw)), effort(std::move(reasoning_effort)) {
    auto opt = [](const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; };
    og_chat_request_init(&q);
    calls.reserve(msgs.size());
    for (const PyMsg& x : msgs) {
      auto& cs = calls.emplace_back();
      for (const PyCall& c : std::get<4>(x))
        cs.push_back({std::get<0>(c).c_str(), std::get<1>(c).c_str(), std::get<2>(c).c_str()});
      c_msgs.push_back({std::get<0>(x).c_str(), opt(std::get<1>(x)), opt(std::get<2>(x)), opt(std::get<3>(x)),
                        cs.empty() ? nullptr : cs.data(), cs.size(), opt(std::get<5>(x))});
    }
    for (const PyTool& x : tools)
      c_tools.push_back({std::get<0>(x).c_str(), opt(std::get<1>(x)),
                         std::get<2>(x).empty() ? nullptr : std::get<2>(x).c_str(), std::get<3>(x) ? 1 : 0});
    q.messages = c_msgs.data();
    q.n_messages = c_msgs.size();
    q.tools = c_tools.data();
    q.n_tools = c_tools.size();
    q.tool_choice = opt(tool_choice);
    q.parallel_tool_calls = parallel ? 1 : 0;
    q.response_format = opt(response_format);
    q.json_schema = opt(json_schema);
    q.json_schema_strict = strict ? 1 : 0;
    q.grammar = opt(grammar);
    q.max_reasoning_tokens = max_reasoning;
    q.chat_template_kwargs = opt(kwargs);
    q.reasoning_effort = opt(effort);
    image_bytes.reserve(images.size());
    for (const PyImage& x : images) image_bytes.push_back(std::string(std::get<2>(x)));
    for (size_t i = 0; i < images.size(); ++i)
      c_images.push_back({std::get<0>(images[i]), std::get<1>(images[i]),
                          reinterpret_cast<const uint8_t*>(image_bytes[i].data()), image_bytes[i].size()});
    q.images = c_images.empty() ? nullptr : c_images.data();
    q.n_images = c_images.size();
  }
};

py::bytes bytes_of(const og_string& s) { return py::bytes(s.data ? s.data : "", s.len); }

py::dict generation_dict(og_generation g) {
  py::dict d;
  d["tokens"] = std::vector<int32_t>(g.tokens.ids, g.tokens.ids + g.tokens.n);
  d["text"] = py::bytes(g.text.data ? g.text.data : "", g.text.len);
  d["stop_reason"] = og_stop_reason_name(g.stop_reason);
  d["prompt_tokens"] = g.prompt_tokens;
  if (g.logprobs) {
    py::list lps;
    for (size_t i = 0; i < g.tokens.n; ++i) {
      py::dict e;
      e["token"] = g.tokens.ids[i];
      e["logprob"] = g.logprobs[i];
      py::list top;
      for (int32_t k = 0; k < g.top_k; ++k)
        top.append(py::make_tuple(g.top_ids[i * g.top_k + k], g.top_logprobs[i * g.top_k + k]));
      e["top_logprobs"] = top;
      lps.append(e);
    }
    d["logprobs"] = lps;
  } else {
    d["logprobs"] = py::none();
  }
  og_generation_free(&g);
  return d;
}

class PyModel {
 public:
  PyModel(const std::string& path, const std::string& tokenizer, const std::string& chat_template, bool mmap,
          int threads, bool experts_in_memory, const std::string& mmproj, bool no_mmproj) {
    og_model_options o;
    og_model_options_init(&o);
    o.mmproj = mmproj.empty() ? nullptr : mmproj.c_str();
    o.no_mmproj = no_mmproj ? 1 : 0;
    o.tokenizer = tokenizer.empty() ? nullptr : tokenizer.c_str();
    o.chat_template = chat_template.c_str();
    o.mmap = mmap;
    o.threads = threads;
    o.experts_in_memory = experts_in_memory;
    og_status s;
    {
      py::gil_scoped_release nogil;
      s = og_model_open(path.c_str(), &o, &m_);
    }
    check_nogil(s);
  }
  ~PyModel() { og_model_close(m_); }
  void close() {
    og_model* m = m_;
    m_ = nullptr;
    check(og_model_close(m));
  }
  og_model* get() const { return h(); }

  py::dict info() const {
    og_model_info i{};
    check(og_model_get_info(h(), &i));
    py::dict d;
    d["architecture"] = i.architecture;
    d["chat_template"] = i.chat_template;
    d["tokenizer_kind"] = i.tokenizer_kind;
    d["n_vocab"] = i.n_vocab;
    d["n_ctx"] = i.n_ctx;
    d["d_model"] = i.d_model;
    d["n_layers"] = i.n_layers;
    d["n_heads"] = i.n_heads;
    d["n_kv_heads"] = i.n_kv_heads;
    d["head_dim"] = i.head_dim;
    d["d_ff"] = i.d_ff;
    d["n_kv_caches"] = i.n_kv_caches;
    d["weights_copied_bytes"] = i.weights_copied_bytes;
    d["weights_mapped_expert_bytes"] = i.weights_mapped_expert_bytes;
    d["generates"] = i.generates != 0;
    d["embeds"] = i.embeds != 0;
    d["embedding_dim"] = i.embedding_dim;
    d["pooling"] = i.pooling;
    return d;
  }
  py::dict special() const {
    og_special_ids s{};
    check(og_special_tokens(h(), &s));
    py::dict d;
    d["bos"] = s.bos;
    d["eos"] = s.eos;
    d["eot"] = s.eot;
    d["pad"] = s.pad;
    d["unk"] = s.unk;
    d["add_bos"] = s.add_bos != 0;
    return d;
  }
  std::vector<int32_t> stop_ids() const {
    og_tokens t{};
    check(og_stop_ids(h(), &t));
    return take_ids(t);
  }
  // One vector per text (og_embed).
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts, int normalize, int64_t dimensions) const {
    std::vector<const char*> ptrs;
    for (const std::string& t : texts) ptrs.push_back(t.c_str());
    og_embed_options o;
    og_embed_options_init(&o);
    o.normalize = normalize;
    o.dimensions = dimensions;
    og_embeddings e{};
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_embed(handle, ptrs.data(), ptrs.size(), &o, &e);
    }
    check_nogil(st);
    std::vector<std::vector<float>> out(e.n);
    for (size_t i = 0; i < e.n; ++i) out[i].assign(e.data + i * e.dim, e.data + (i + 1) * e.dim);
    og_embeddings_free(&e);
    return out;
  }
  std::vector<int32_t> encode(const std::string& text, bool add_special, bool parse_special) const {
    og_tokens t{};
    og_status s;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      s = og_tokenize(handle, text.data(), text.size(), add_special, parse_special, &t);
    }
    check_nogil(s);
    return take_ids(t);
  }
  py::bytes decode(const std::vector<int32_t>& ids, bool skip_special) const {
    og_string out{};
    check(og_detokenize(h(), ids.data(), ids.size(), skip_special, &out));
    return take_bytes(out);
  }
  py::bytes piece(int32_t id) const {
    const char* p = nullptr;
    size_t n = 0;
    check(og_token_piece(h(), id, &p, &n));
    return py::bytes(p, n);
  }
  py::bytes render_chat(const std::vector<std::pair<std::string, std::string>>& messages, bool add_gen) const {
    const auto m = c_messages(messages);
    og_string out{};
    check(og_chat_render(h(), m.data(), m.size(), add_gen, &out));
    return take_bytes(out);
  }
  std::vector<int32_t> encode_chat(const std::vector<std::pair<std::string, std::string>>& messages,
                                   bool add_gen) const {
    const auto m = c_messages(messages);
    og_tokens t{};
    check(og_chat_encode(h(), m.data(), m.size(), add_gen, &t));
    return take_ids(t);
  }

 private:
  // The handle, or ClosedError once close() was called.
  og_model* h() const {
    if (!m_) raise_closed("model");
    return m_;
  }
  og_model* m_ = nullptr;
};

// og_*_spec_stats as a dict (accepted_per_pos: the first OG_SPEC_POSITIONS positions).
template <class Get>
py::dict spec_stats_dict(Get get) {
  og_spec_stats s{};
  s.struct_size = sizeof(s);
  check(get(&s));
  py::dict d;
  d["drafts"] = s.drafts;
  d["draft_tokens"] = s.draft_tokens;
  d["accepted_tokens"] = s.accepted_tokens;
  d["pauses"] = s.pauses;
  py::list per_pos;
  for (int64_t n : s.accepted_per_pos) per_pos.append(n);
  d["accepted_per_pos"] = per_pos;
  d["accepted_beyond"] = s.accepted_beyond;
  return d;
}

class PySession {
 public:
  PySession(PyModel& model, const std::string& kv_kind, const std::string& kv_dtype, int64_t kv_max_capacity,
            int64_t kv_initial_capacity, const std::vector<int64_t>& kv_windows, int64_t prefill_chunk_size,
            int spec_ngram_size, int spec_ngram_min, int spec_draft_max, int spec_draft_min, PyModel* draft_model,
            double draft_p_min) {
    og_session_options o;
    og_session_options_init(&o);
    o.kv_kind = kv_kind.c_str();
    o.kv_dtype = kv_dtype.c_str();
    o.kv_max_capacity = kv_max_capacity;
    o.kv_initial_capacity = kv_initial_capacity;
    o.kv_windows = kv_windows.empty() ? nullptr : kv_windows.data();
    o.n_kv_windows = kv_windows.size();
    o.prefill_chunk_size = prefill_chunk_size;
    o.spec_ngram_size = spec_ngram_size;
    o.spec_ngram_min = spec_ngram_min;
    o.spec_draft_max = spec_draft_max;
    o.spec_draft_min = spec_draft_min;
    o.draft_model = draft_model ? draft_model->get() : nullptr;
    o.spec_draft_p_min = draft_p_min;
    check(og_session_new(model.get(), &o, &s_));
  }
  explicit PySession(og_session* s) : s_(s) {}
  ~PySession() { og_session_free(s_); }
  void close() {
    og_session* s = s_;
    s_ = nullptr;
    check(og_session_free(s));
  }

  // The prefill runs on a thread of its own while this one checks for signals
  // every 20 ms: Ctrl-C cancels it (og_session_cancel, within one prefill
  // chunk), takes it back whole, and raises KeyboardInterrupt.
  void prefill(const std::vector<int32_t>& ids, bool want_logits) {
    auto* const handle = h();
    og_status st = OG_OK;
    std::string message;
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    std::thread worker([&] {
      const og_status r = og_session_prefill(handle, ids.data(), ids.size(), want_logits);
      std::lock_guard<std::mutex> lock(mu);
      st = r;
      if (r != OG_OK) message = og_last_error();  // per thread: read it here
      finished = true;
      cv.notify_one();
    });
    bool interrupted = false;
    for (;;) {
      {
        py::gil_scoped_release nogil;
        std::unique_lock<std::mutex> lock(mu);
        if (cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return finished; })) break;
      }
      if (!interrupted && PyErr_CheckSignals() != 0) {
        interrupted = true;  // the KeyboardInterrupt stays set until raised below
        og_session_cancel(handle);
      }
    }
    {
      py::gil_scoped_release nogil;
      worker.join();
    }
    if (interrupted) {
      if (st == OG_OK) og_session_undo(handle);  // it finished before the cancel landed: taken back too
      throw py::error_already_set();
    }
    if (st != OG_OK) raise(st, message.c_str());
  }
  void stream_start(const std::vector<int32_t>& ids, const GenOpts& g) {
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_stream_start(handle, ids.data(), ids.size(), &g.o);
    }
    check_nogil(st);
  }
  // (token or -1, text bytes, done)
  py::tuple stream_next() {
    int32_t tok = -1;
    const char* text = nullptr;
    size_t len = 0;
    int done = 0;
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_stream_next(handle, &tok, &text, &len, &done);
    }
    check_nogil(st);
    return py::make_tuple(tok, py::bytes(text, len), done != 0);
  }
  void stream_cancel() { check(og_session_stream_cancel(h())); }
  py::dict stream_finish() {
    og_generation g{};
    check(og_session_stream_finish(h(), &g));
    return generation_dict(g);
  }
  void chat_start(const ChatReq& req, const GenOpts& g) {
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_chat_start(handle, &req.q, &g.o);
    }
    check_nogil(st);
  }
  // (reasoning bytes, content bytes, [(index, id, name, arguments)], done)
  py::tuple chat_next() {
    og_chat_delta d{};
    int done = 0;
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_chat_next(handle, &d, &done);
    }
    check_nogil(st);
    py::list calls;
    for (size_t i = 0; i < d.n_tool_calls; ++i)
      calls.append(py::make_tuple(d.tool_calls[i].index, py::bytes(d.tool_calls[i].id), py::bytes(d.tool_calls[i].name),
                                  py::bytes(d.tool_calls[i].arguments)));
    return py::make_tuple(py::bytes(d.reasoning_content, d.reasoning_len), py::bytes(d.content, d.content_len), calls,
                          done != 0);
  }
  py::dict chat_finish() {
    og_chat_result r{};
    check(og_session_chat_finish(h(), &r));
    py::dict d;
    d["content"] = bytes_of(r.content);
    d["reasoning_content"] = bytes_of(r.reasoning_content);
    py::list calls;
    for (size_t i = 0; i < r.n_tool_calls; ++i)
      calls.append(py::make_tuple(bytes_of(r.tool_calls[i].id), bytes_of(r.tool_calls[i].name),
                                  bytes_of(r.tool_calls[i].arguments)));
    d["tool_calls"] = calls;
    d["finish_reason"] = std::string(r.finish_reason ? r.finish_reason : "");
    d["prompt_tokens"] = r.prompt_tokens;
    d["cached_tokens"] = r.cached_tokens;
    d["completion_tokens"] = r.completion_tokens;
    og_generation g = r.generation;
    r.generation = og_generation{};
    og_chat_result_free(&r);
    d["generation"] = generation_dict(g);
    return d;
  }
  // A read-only view of the session's logits buffer (no copy); `self` keeps it alive.
  py::array logits(py::object self) {
    const float* l = nullptr;
    size_t n = 0;
    check(og_session_logits(h(), &l, &n));
    py::array_t<float> a({static_cast<py::ssize_t>(n)}, {static_cast<py::ssize_t>(sizeof(float))}, l, self);
    a.attr("flags").attr("writeable") = false;
    return a;
  }
  int64_t position() const {
    int64_t p = 0;
    check(og_session_position(h(), &p));
    return p;
  }
  int64_t capacity() const {
    int64_t p = 0;
    check(og_session_capacity(h(), &p));
    return p;
  }
  std::vector<int32_t> history() const {
    og_tokens t{};
    check(og_session_history(h(), &t));
    return take_ids(t);
  }
  void rewind(int64_t n) {
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_rewind(handle, n);
    }
    check_nogil(st);
  }
  void undo() {
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_undo(handle);
    }
    check_nogil(st);
  }
  void reset() { check(og_session_reset(h())); }
  void save(const std::string& path) {
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_save(handle, path.c_str());
    }
    check_nogil(st);
  }
  void load(const std::string& path) {
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_load(handle, path.c_str());
    }
    check_nogil(st);
  }
  PySession* fork() {
    og_session* f = nullptr;
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_session_fork(handle, &f);
    }
    check_nogil(st);
    return new PySession(f);
  }
  py::dict spec_stats() const {
    return spec_stats_dict([this](og_spec_stats* s) { return og_session_spec_stats(h(), s); });
  }
  py::dict stats() const {
    og_session_stats s{};
    check(og_session_get_stats(h(), &s));
    py::dict d;
    d["prompt_tokens"] = s.prompt_tokens;
    d["generated_tokens"] = s.generated_tokens;
    d["decode_steps"] = s.decode_steps;
    d["recomputed_tokens"] = s.recomputed_tokens;
    d["ttft_s"] = s.ttft_s;
    d["prefill_s"] = s.prefill_s;
    d["decode_s"] = s.decode_s;
    d["sampling_s"] = s.sampling_s;
    d["cache_positions"] = s.cache_positions;
    d["cache_capacity"] = s.cache_capacity;
    d["cache_bytes_allocated"] = s.cache_bytes_allocated;
    return d;
  }

 private:
  // The handle, or ClosedError once close() was called.
  og_session* h() const {
    if (!s_) raise_closed("session");
    return s_;
  }
  og_session* s_ = nullptr;
};

class PyEngine {
 public:
  PyEngine(PyModel& model, int max_sequences, int64_t max_session_tokens, int64_t step_tokens, int max_queue,
           int prefix_cache_entries, const std::string& kv_kind, const std::string& kv_dtype, int spec_ngram_size,
           int spec_ngram_min, int spec_draft_max, int spec_draft_min, PyModel* draft_model, double draft_p_min) {
    og_engine_options o;
    og_engine_options_init(&o);
    o.max_sequences = max_sequences;
    o.max_session_tokens = max_session_tokens;
    o.step_tokens = step_tokens;
    o.max_queue = max_queue;
    o.prefix_cache_entries = prefix_cache_entries;
    o.kv_kind = kv_kind.c_str();
    o.kv_dtype = kv_dtype.c_str();
    o.spec_ngram_size = spec_ngram_size;
    o.spec_ngram_min = spec_ngram_min;
    o.spec_draft_max = spec_draft_max;
    o.spec_draft_min = spec_draft_min;
    o.draft_model = draft_model ? draft_model->get() : nullptr;
    o.spec_draft_p_min = draft_p_min;
    check(og_engine_new(model.get(), &o, &e_));
  }
  ~PyEngine() {
    py::gil_scoped_release nogil;
    og_engine_free(e_);
  }
  void close() {
    og_engine* e = e_;
    e_ = nullptr;
    og_status st;
    {
      py::gil_scoped_release nogil;
      st = og_engine_free(e);
    }
    check_nogil(st);
  }
  uint64_t submit(const std::vector<int32_t>& ids, const GenOpts& g) {
    uint64_t id = 0;
    check(og_engine_submit(h(), ids.data(), ids.size(), &g.o, &id));
    return id;
  }
  // (kind, token, text bytes, finish dict or None); kind "none" after the timeout.
  py::tuple next(uint64_t id, int timeout_ms) {
    og_event ev{};
    og_status st;
    auto* const handle = h();
    {
      py::gil_scoped_release nogil;
      st = og_engine_next(handle, id, timeout_ms, &ev);
    }
    check_nogil(st);
    static const char* kinds[] = {"none", "token", "text", "finished"};
    py::object fin = py::none();
    if (ev.kind == OG_EVENT_FINISHED) {
      py::dict d;
      d["finish_reason"] = og_finish_reason_name(ev.finish_reason);
      d["message"] = std::string(ev.text, ev.len);
      d["prompt_tokens"] = ev.prompt_tokens;
      d["cached_tokens"] = ev.cached_tokens;
      d["generated_tokens"] = ev.generated_tokens;
      fin = d;
    }
    const bool has_text = ev.kind == OG_EVENT_TEXT;
    return py::make_tuple(kinds[ev.kind], ev.token, py::bytes(has_text ? ev.text : "", has_text ? ev.len : 0), fin);
  }
  void cancel(uint64_t id) { check(og_engine_cancel(h(), id)); }
  py::dict stats() const {
    og_engine_stats s{};
    check(og_engine_get_stats(h(), &s));
    py::dict d;
    d["waiting"] = s.waiting;
    d["running"] = s.running;
    d["peak_running"] = s.peak_running;
    d["kv_cache_usage"] = s.kv_cache_usage;
    d["steps"] = s.steps;
    d["rows"] = s.rows;
    d["decode_rows"] = s.decode_rows;
    d["prompt_tokens"] = s.prompt_tokens;
    d["generated_tokens"] = s.generated_tokens;
    d["prefix_lookups"] = s.prefix_lookups;
    d["prefix_hits"] = s.prefix_hits;
    d["prefix_hit_tokens"] = s.prefix_hit_tokens;
    d["cache_bytes_allocated"] = s.cache_bytes_allocated;
    d["peak_cache_bytes"] = s.peak_cache_bytes;
    d["finished"] = s.finished;
    d["cancelled"] = s.cancelled;
    d["refused"] = s.refused;
    d["failed"] = s.failed;
    return d;
  }
  py::dict spec_stats() const {
    return spec_stats_dict([this](og_spec_stats* s) { return og_engine_spec_stats(h(), s); });
  }

 private:
  // The handle, or ClosedError once close() was called.
  og_engine* h() const {
    if (!e_) raise_closed("engine");
    return e_;
  }
  og_engine* e_ = nullptr;
};

}  // namespace

PYBIND11_MODULE(_offgraph, m) {
  m.doc() = "The C API of offgraph (liboffgraph.so) for the offgraph package; use `import offgraph`.";
  m.def("version", [] { return std::string(og_version()); });
  // og_engine_options_init's values (runtime/generation_limits.h): Engine's keyword defaults.
  m.def("engine_defaults", [] {
    og_engine_options o;
    og_engine_options_init(&o);
    py::dict d;
    d["max_sequences"] = o.max_sequences;
    d["max_session_tokens"] = o.max_session_tokens;
    d["step_tokens"] = o.step_tokens;
    return d;
  });

  // /v1/completions' `logprobs` bound, create_completion's (the server's, one home).
  m.attr("completion_logprobs_max") = og::limits::kCompletionLogprobsMax;
  // og_limits (the process's bounds on templates and schemas) as a dict of its field names.
  m.def("get_limits", [] {
    og_limits l;
    l.struct_size = sizeof l;
    check(og_get_limits(&l));
    py::dict d;
    for (const auto& [name, field] : kLimitFields) d[name] = l.*field;
    return d;
  });
  // Sets the named fields (the others keep the values in force); an unknown name or a bad value
  // is InvalidArgumentError naming it, and nothing changes.
  m.def("set_limits", [](const std::map<std::string, int64_t>& values) {
    og_limits l;
    l.struct_size = sizeof l;
    check(og_get_limits(&l));
    for (const auto& [key, v] : values) {
      bool known = false;
      for (const auto& [name, field] : kLimitFields)
        if (key == name) l.*field = v, known = true;
      if (!known) {
        const std::string m = "set_limits(): unknown limit '" + key + "'";
        raise(OG_ERR_INVALID_ARGUMENT, m.c_str());
      }
    }
    check(og_set_limits(&l));
  });

  py::class_<GenOpts>(m, "GenOpts")
      .def(py::init<int64_t, double, int, double, double, double, int, double, double, int64_t,
                    std::vector<std::string>, bool, bool, int>());
  py::class_<ChatReq>(m, "ChatReq")
      .def(py::init<std::vector<PyMsg>, std::vector<PyTool>, std::optional<std::string>, bool,
                    std::optional<std::string>, std::optional<std::string>, bool, std::optional<std::string>, int64_t,
                    std::optional<std::string>, std::optional<std::string>, const std::vector<PyImage>&>());

  py::class_<PyModel>(m, "Model")
      .def(py::init<const std::string&, const std::string&, const std::string&, bool, int, bool,
                    const std::string&, bool>())
      .def("close", &PyModel::close)
      .def("info", &PyModel::info)
      .def("special", &PyModel::special)
      .def("stop_ids", &PyModel::stop_ids)
      .def("embed", &PyModel::embed)
      .def("encode", &PyModel::encode)
      .def("decode", &PyModel::decode)
      .def("piece", &PyModel::piece)
      .def("render_chat", &PyModel::render_chat)
      .def("encode_chat", &PyModel::encode_chat);

  py::class_<PySession>(m, "Session")
      .def(py::init<PyModel&, const std::string&, const std::string&, int64_t, int64_t, const std::vector<int64_t>&,
                    int64_t, int, int, int, int, PyModel*, double>())
      .def("close", &PySession::close)
      .def("prefill", &PySession::prefill)
      .def("stream_start", &PySession::stream_start)
      .def("stream_next", &PySession::stream_next)
      .def("stream_cancel", &PySession::stream_cancel)
      .def("stream_finish", &PySession::stream_finish)
      .def("chat_start", &PySession::chat_start)
      .def("chat_next", &PySession::chat_next)
      .def("chat_finish", &PySession::chat_finish)
      .def("logits", [](py::object self) { return self.cast<PySession&>().logits(self); })
      .def("position", &PySession::position)
      .def("capacity", &PySession::capacity)
      .def("history", &PySession::history)
      .def("rewind", &PySession::rewind)
      .def("undo", &PySession::undo)
      .def("reset", &PySession::reset)
      .def("save", &PySession::save)
      .def("load", &PySession::load)
      .def("fork", &PySession::fork, py::return_value_policy::take_ownership)
      .def("stats", &PySession::stats)
      .def("spec_stats", &PySession::spec_stats);

  py::class_<PyEngine>(m, "Engine")
      .def(py::init<PyModel&, int, int64_t, int64_t, int, int, const std::string&, const std::string&, int, int, int,
                    int, PyModel*, double>())
      .def("close", &PyEngine::close)
      .def("submit", &PyEngine::submit)
      .def("next", &PyEngine::next)
      .def("cancel", &PyEngine::cancel)
      .def("stats", &PyEngine::stats)
      .def("spec_stats", &PyEngine::spec_stats);
}
