// offgraph.hpp: a thin RAII C++ layer over the C API (offgraph.h). Each class
// owns one handle (movable, not copyable) and frees it in its destructor; a
// failed call throws offgraph::Error carrying the status and the C message.
// Thread safety is the C API's: Model and Engine from any thread, a Session
// from one thread at a time.
#ifndef OFFGRAPH_HPP
#define OFFGRAPH_HPP

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "offgraph/offgraph.h"

namespace offgraph {

class Error : public std::runtime_error {
 public:
  Error(og_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  og_status status() const { return status_; }

 private:
  og_status status_;
};

inline void check(og_status s) {
  if (s != OG_OK) throw Error(s, og_last_error());
}

// Takes ownership of what a C call returned.
inline std::vector<int32_t> take(og_tokens t) {
  std::vector<int32_t> v(t.ids, t.ids + t.n);
  og_tokens_free(&t);
  return v;
}
inline std::string take(og_string s) {
  std::string v(s.data ? s.data : "", s.len);
  og_string_free(&s);
  return v;
}

struct ChatMessage {
  std::string role, content;
};

struct Generation {
  std::vector<int32_t> tokens;
  std::string text;
  og_stop_reason stop_reason = OG_STOP_NONE;
  int64_t prompt_tokens = 0;
};

inline Generation take(og_generation g) {
  Generation r{std::vector<int32_t>(g.tokens.ids, g.tokens.ids + g.tokens.n), std::string(g.text.data, g.text.len),
               g.stop_reason, g.prompt_tokens};
  og_generation_free(&g);
  return r;
}

// A chat request (og_chat_request in C++ types; see offgraph.h for each field).
struct ChatToolCall {
  std::string id, name, arguments;  // arguments: a JSON object's text
};
struct ChatMsg {
  std::string role;                    // system, developer, user, assistant, tool
  std::optional<std::string> content;  // unset: an assistant message of tool calls only
  std::optional<std::string> reasoning_content, name;
  std::vector<ChatToolCall> tool_calls;  // assistant
  std::optional<std::string> tool_call_id;  // tool
};
struct ChatTool {
  std::string name;
  std::optional<std::string> description;
  std::string parameters;  // its JSON schema's text ("" = no arguments)
  bool strict = false;
};
// An encoded image (PNG, JPEG, WebP, GIF) in user message `message`, before
// byte `offset` of its content (og_chat_image).
struct ChatImage {
  size_t message = 0;
  size_t offset = 0;
  std::string bytes;
};
struct ChatRequest {
  std::vector<ChatMsg> messages;
  std::vector<ChatTool> tools;
  std::vector<ChatImage> images;  // for a model with a vision tower
  std::optional<std::string> tool_choice;  // "none", "auto", "required" or a tool's name; unset: auto with tools
  bool parallel_tool_calls = true;
  std::string response_format;  // "" or "text", "json_object", "json_schema"
  std::string json_schema;      // with "json_schema"
  bool json_schema_strict = false;
  std::optional<std::string> grammar;  // GBNF
  int64_t max_reasoning_tokens = -1;   // -1: 1024
  std::string chat_template_kwargs;    // a JSON object's text ("" = none)
  std::optional<std::string> reasoning_effort;
};
// What og_session_chat returns, owned.
struct ChatResult {
  std::string content, reasoning_content;
  std::vector<ChatToolCall> tool_calls;
  std::string finish_reason;  // "stop", "length", "tool_calls"
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  Generation generation;  // the raw turn
};
// What one ChatStream::next() released.
struct ChatDelta {
  std::string reasoning_content, content;
  struct Call {
    int32_t index = 0;
    std::string id, name, arguments;
  };
  std::vector<Call> tool_calls;
};

inline std::string take_text(og_string& s) { return std::string(s.data ? s.data : "", s.len); }

inline ChatResult take(og_chat_result r) {
  ChatResult c;
  c.content = take_text(r.content);
  c.reasoning_content = take_text(r.reasoning_content);
  for (size_t i = 0; i < r.n_tool_calls; ++i)
    c.tool_calls.push_back({take_text(r.tool_calls[i].id), take_text(r.tool_calls[i].name),
                            take_text(r.tool_calls[i].arguments)});
  c.finish_reason = r.finish_reason ? r.finish_reason : "";
  c.prompt_tokens = r.prompt_tokens;
  c.cached_tokens = r.cached_tokens;
  c.completion_tokens = r.completion_tokens;
  og_generation g = r.generation;
  r.generation = og_generation{};
  og_chat_result_free(&r);
  c.generation = take(g);
  return c;
}

// A ChatRequest as the C structs, pointing into it (keep both alive for the call).
class CChatRequest {
 public:
  explicit CChatRequest(const ChatRequest& r) {
    og_chat_request_init(&q_);
    calls_.reserve(r.messages.size());
    for (const ChatMsg& m : r.messages) {
      std::vector<og_chat_tool_call>& calls = calls_.emplace_back();
      for (const ChatToolCall& c : m.tool_calls) calls.push_back({c.id.c_str(), c.name.c_str(), c.arguments.c_str()});
      msgs_.push_back({m.role.c_str(), opt(m.content), opt(m.reasoning_content), opt(m.name),
                       calls.empty() ? nullptr : calls.data(), calls.size(), opt(m.tool_call_id)});
    }
    for (const ChatTool& t : r.tools)
      tools_.push_back({t.name.c_str(), opt(t.description), t.parameters.empty() ? nullptr : t.parameters.c_str(),
                        t.strict ? 1 : 0});
    q_.messages = msgs_.data();
    q_.n_messages = msgs_.size();
    q_.tools = tools_.data();
    q_.n_tools = tools_.size();
    q_.tool_choice = opt(r.tool_choice);
    q_.parallel_tool_calls = r.parallel_tool_calls ? 1 : 0;
    q_.response_format = r.response_format.empty() ? nullptr : r.response_format.c_str();
    q_.json_schema = r.json_schema.empty() ? nullptr : r.json_schema.c_str();
    q_.json_schema_strict = r.json_schema_strict ? 1 : 0;
    q_.grammar = opt(r.grammar);
    q_.max_reasoning_tokens = r.max_reasoning_tokens;
    q_.chat_template_kwargs = r.chat_template_kwargs.empty() ? nullptr : r.chat_template_kwargs.c_str();
    q_.reasoning_effort = opt(r.reasoning_effort);
    for (const ChatImage& im : r.images)
      images_.push_back({im.message, im.offset, reinterpret_cast<const uint8_t*>(im.bytes.data()), im.bytes.size()});
    q_.images = images_.empty() ? nullptr : images_.data();
    q_.n_images = images_.size();
  }
  CChatRequest(const CChatRequest&) = delete;
  CChatRequest& operator=(const CChatRequest&) = delete;
  const og_chat_request* get() const { return &q_; }

 private:
  static const char* opt(const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; }
  std::vector<std::vector<og_chat_tool_call>> calls_;
  std::vector<og_chat_msg> msgs_;
  std::vector<og_chat_tool> tools_;
  std::vector<og_chat_image> images_;
  og_chat_request q_{};
};

inline og_generate_options default_generate_options() {
  og_generate_options o;
  og_generate_options_init(&o);
  return o;
}

// Owns a handle; Free is the C function that releases it.
template <class H, og_status (*Free)(H*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(H* h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (h_) Free(h_);
    h_ = nullptr;
  }
  H* get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  H* h_ = nullptr;
};

// A turn pulled step by step (Session::stream): next() until it returns false,
// then finish() (the destructor finishes an unfinished stream as cancelled).
// The session must outlive it.
class Stream {
 public:
  explicit Stream(og_session* s) : s_(s) {}
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  ~Stream() {
    if (s_) og_session_stream_finish(s_, nullptr);
  }
  // One step (og_session_stream_next): appends the text that became ready to *text and sets
  // *token (-1 for a prefill chunk or an end without a token); false once the turn has ended.
  bool next(std::string* text = nullptr, int32_t* token = nullptr) {
    int32_t t = -1;
    const char* p = nullptr;
    size_t n = 0;
    int done = 0;
    check(og_session_stream_next(s_, &t, &p, &n, &done));
    if (text) text->append(p, n);
    if (token) *token = t;
    return done == 0;
  }
  // Ends the turn early, keeping what was generated; any thread, even while next() runs.
  void cancel() { check(og_session_stream_cancel(s_)); }
  Generation finish() {
    og_generation g{};
    check(og_session_stream_finish(std::exchange(s_, nullptr), &g));
    return take(g);
  }

 private:
  og_session* s_;
};

// A chat turn pulled step by step (Session::chat_stream): next() until it
// returns false, then finish() (the destructor finishes an unfinished one).
class ChatStream {
 public:
  explicit ChatStream(og_session* s) : s_(s) {}
  ChatStream(ChatStream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  ChatStream& operator=(ChatStream&&) = delete;
  ~ChatStream() {
    if (s_) og_session_chat_finish(s_, nullptr);
  }
  // One step (og_session_chat_next): *delta gets what became ready; false once the turn has ended.
  bool next(ChatDelta* delta = nullptr) {
    og_chat_delta d{};
    int done = 0;
    check(og_session_chat_next(s_, &d, &done));
    if (delta) {
      delta->reasoning_content.assign(d.reasoning_content ? d.reasoning_content : "", d.reasoning_len);
      delta->content.assign(d.content ? d.content : "", d.content_len);
      delta->tool_calls.clear();
      for (size_t i = 0; i < d.n_tool_calls; ++i)
        delta->tool_calls.push_back({d.tool_calls[i].index, d.tool_calls[i].id, d.tool_calls[i].name,
                                     d.tool_calls[i].arguments});
    }
    return done == 0;
  }
  void cancel() { check(og_session_stream_cancel(s_)); }
  ChatResult finish() {
    og_chat_result r{};
    check(og_session_chat_finish(std::exchange(s_, nullptr), &r));
    return take(r);
  }

 private:
  og_session* s_;
};

class Session {
  // What generate() passes as user_data when it adds its own text callback:
  // the caller's C callbacks and their user_data go on being called.
  struct Relay {
    std::function<bool(std::string_view)>* fn;
    og_token_callback c_token;
    og_text_callback c_text;
    void* c_user_data;
    static int token(void* ud, int32_t id) {
      const Relay* r = static_cast<const Relay*>(ud);
      return r->c_token(r->c_user_data, id);
    }
    static int text(void* ud, const char* t, size_t n) {
      const Relay* r = static_cast<const Relay*>(ud);
      const int c_stop = r->c_text ? r->c_text(r->c_user_data, t, n) : 0;
      const bool go_on = (*r->fn)(std::string_view(t, n));
      return c_stop != 0 || !go_on ? 1 : 0;
    }
  };

 public:
  explicit Session(og_session* s) : h_(s) {}
  og_session* get() const { return h_.get(); }

  void prefill(const std::vector<int32_t>& tokens, bool want_logits = false) {
    check(og_session_prefill(h_.get(), tokens.data(), tokens.size(), want_logits ? 1 : 0));
  }
  // An encoded image into the history, pending, as the template places one (og_session_append_image).
  void append_image(const std::string& bytes) {
    check(og_session_append_image(h_.get(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }
  // on_text (optional) receives the text as it streams; return false from it to cancel.
  // The C callbacks in opts (on_token, on_text) keep working beside it, each
  // with its own opts.user_data: the wrapper relays to both.
  Generation generate(const std::vector<int32_t>& prompt, og_generate_options opts = default_generate_options(),
                      std::function<bool(std::string_view)> on_text = nullptr) {
    Relay relay{&on_text, opts.on_token, opts.on_text, opts.user_data};
    if (on_text) {
      opts.user_data = &relay;
      opts.on_token = relay.c_token ? &Relay::token : nullptr;
      opts.on_text = &Relay::text;
    }
    og_generation g{};
    check(og_session_generate(h_.get(), prompt.data(), prompt.size(), &opts, &g));
    return take(g);
  }
  // The same turn step by step (og_session_stream_start); opts' C callbacks are called as in generate().
  Stream stream(const std::vector<int32_t>& prompt, const og_generate_options& opts = default_generate_options()) {
    check(og_session_stream_start(h_.get(), prompt.data(), prompt.size(), &opts));
    return Stream(h_.get());
  }
  // A chat turn (og_session_chat): the conversation rendered with the model's
  // template, the reply constrained and split as the server does; the next
  // turn reuses the history it shares with this one.
  ChatResult chat(const ChatRequest& req, const og_generate_options& opts = default_generate_options()) {
    const CChatRequest c(req);
    og_chat_result r{};
    check(og_session_chat(h_.get(), c.get(), &opts, &r));
    return take(r);
  }
  // The same streamed (og_session_chat_start; the request is read at the start).
  ChatStream chat_stream(const ChatRequest& req, const og_generate_options& opts = default_generate_options()) {
    const CChatRequest c(req);
    check(og_session_chat_start(h_.get(), c.get(), &opts));
    return ChatStream(h_.get());
  }
  // Cancels the generate, prefill or stream running on this session, from any thread
  // (og_session_cancel): it stops within one prefill chunk.
  void cancel() { check(og_session_cancel(h_.get())); }
  og_session_stats stats() const {
    og_session_stats s{};
    check(og_session_get_stats(h_.get(), &s));
    return s;
  }
  // Speculation's counters (zero without og_session_options' spec_ngram_size or draft_model).
  og_spec_stats spec_stats() const {
    og_spec_stats s{};
    s.struct_size = sizeof(s);
    check(og_session_spec_stats(h_.get(), &s));
    return s;
  }
  std::vector<float> logits() const {
    const float* l = nullptr;
    size_t n = 0;
    check(og_session_logits(h_.get(), &l, &n));
    return std::vector<float>(l, l + n);
  }
  int64_t position() const {
    int64_t p = 0;
    check(og_session_position(h_.get(), &p));
    return p;
  }
  std::vector<int32_t> history() const {
    og_tokens t{};
    check(og_session_history(h_.get(), &t));
    return take(t);
  }
  void rewind(int64_t length) { check(og_session_rewind(h_.get(), length)); }
  void undo() { check(og_session_undo(h_.get())); }
  // og_session_save / og_session_load: the state in a file; a loaded session continues as the saved one.
  void save(const std::string& path) { check(og_session_save(h_.get(), path.c_str())); }
  void load(const std::string& path) { check(og_session_load(h_.get(), path.c_str())); }
  void reset() { check(og_session_reset(h_.get())); }
  Session fork() const {
    og_session* f = nullptr;
    check(og_session_fork(h_.get(), &f));
    return Session(f);
  }

 private:
  Handle<og_session, og_session_free> h_;
};

class Model {
 public:
  explicit Model(const std::string& path, const og_model_options* opts = nullptr) {
    og_model* m = nullptr;
    check(og_model_open(path.c_str(), opts, &m));
    h_ = Handle<og_model, og_model_close>(m);
  }
  og_model* get() const { return h_.get(); }

  og_model_info info() const {
    og_model_info i{};
    check(og_model_get_info(h_.get(), &i));
    return i;
  }
  og_special_ids special() const {
    og_special_ids s{};
    check(og_special_tokens(h_.get(), &s));
    return s;
  }
  std::vector<int32_t> stop_ids() const {
    og_tokens t{};
    check(og_stop_ids(h_.get(), &t));
    return take(t);
  }
  // One vector per text (og_embed: the model's pooling, as POST /v1/embeddings); opts NULL = defaults.
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts,
                                        const og_embed_options* opts = nullptr) const {
    std::vector<const char*> p;
    for (const std::string& t : texts) p.push_back(t.c_str());
    og_embeddings e{};
    check(og_embed(h_.get(), p.data(), p.size(), opts, &e));
    std::vector<std::vector<float>> out(e.n);
    for (size_t i = 0; i < e.n; ++i) out[i].assign(e.data + i * e.dim, e.data + (i + 1) * e.dim);
    og_embeddings_free(&e);
    return out;
  }
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, bool parse_special = false) const {
    og_tokens t{};
    check(og_tokenize(h_.get(), text.data(), text.size(), add_special, parse_special, &t));
    return take(t);
  }
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = true) const {
    og_string s{};
    check(og_detokenize(h_.get(), ids.data(), ids.size(), skip_special, &s));
    return take(s);
  }
  std::string piece(int32_t id) const {
    const char* p = nullptr;
    size_t n = 0;
    check(og_token_piece(h_.get(), id, &p, &n));
    return std::string(p, n);
  }
  std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const {
    const std::vector<og_chat_message> m = c_messages(messages);
    og_string s{};
    check(og_chat_render(h_.get(), m.data(), m.size(), add_generation_prompt, &s));
    return take(s);
  }
  std::vector<int32_t> encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const {
    const std::vector<og_chat_message> m = c_messages(messages);
    og_tokens t{};
    check(og_chat_encode(h_.get(), m.data(), m.size(), add_generation_prompt, &t));
    return take(t);
  }
  Session session(const og_session_options* opts = nullptr) const {
    og_session* s = nullptr;
    check(og_session_new(h_.get(), opts, &s));
    return Session(s);
  }

 private:
  static std::vector<og_chat_message> c_messages(const std::vector<ChatMessage>& messages) {
    std::vector<og_chat_message> m;
    for (const ChatMessage& x : messages) m.push_back({x.role.c_str(), x.content.c_str()});
    return m;
  }
  Handle<og_model, og_model_close> h_;
};

class Engine {
 public:
  explicit Engine(const Model& model, const og_engine_options* opts = nullptr) {
    og_engine* e = nullptr;
    check(og_engine_new(model.get(), opts, &e));
    h_ = Handle<og_engine, og_engine_free>(e);
  }
  og_engine* get() const { return h_.get(); }

  uint64_t submit(const std::vector<int32_t>& prompt, const og_generate_options& opts = default_generate_options()) {
    uint64_t id = 0;
    check(og_engine_submit(h_.get(), prompt.data(), prompt.size(), &opts, &id));
    return id;
  }
  // The next event of request `id` (kind OG_EVENT_NONE after timeout_ms; < 0 waits).
  og_event next(uint64_t id, int32_t timeout_ms = -1) {
    og_event e{};
    check(og_engine_next(h_.get(), id, timeout_ms, &e));
    return e;
  }
  // Reads request `id` to its end: its tokens and text, and how it finished.
  Generation collect(uint64_t id, og_finish_reason* reason = nullptr) {
    Generation g;
    for (;;) {
      const og_event e = next(id);
      if (e.kind == OG_EVENT_TOKEN) g.tokens.push_back(e.token);
      if (e.kind == OG_EVENT_TEXT) g.text.append(e.text, e.len);
      if (e.kind == OG_EVENT_FINISHED) {
        if (reason) *reason = e.finish_reason;
        g.prompt_tokens = e.prompt_tokens;
        return g;
      }
    }
  }
  void cancel(uint64_t id) { check(og_engine_cancel(h_.get(), id)); }
  og_engine_stats stats() const {
    og_engine_stats s{};
    check(og_engine_get_stats(h_.get(), &s));
    return s;
  }
  // Speculation's counters (zero without og_engine_options' spec_ngram_size or draft_model).
  og_spec_stats spec_stats() const {
    og_spec_stats s{};
    s.struct_size = sizeof(s);
    check(og_engine_spec_stats(h_.get(), &s));
    return s;
  }

 private:
  Handle<og_engine, og_engine_free> h_;
};

}  // namespace offgraph

#endif  // OFFGRAPH_HPP
