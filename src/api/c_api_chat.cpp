// The C API's chat (offgraph.h og_session_chat*): a typed chat request read
// into og::ChatRequest (chat/chat_request.h), planned as the server plans
// /v1/chat/completions (the same render, reply parser options, tool-call or
// structured-output grammar after the reasoning, reasoning budget and
// grammar vocabulary), run as a stream on the session, its text split by the
// reply parser. A turn keeps the part of the session's history that the new
// render shares, so a conversation's next turn prefills only what it adds.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "api/c_api_images.h"
#include "api/c_api_session.h"
#include "chat/chat_request.h"
#include "chat/request_error.h"
#include "model/config.h"
#include "runtime/chat_turn.h"
#include "runtime/constraint.h"
#include "runtime/model_chat.h"
#include "runtime/prompt_room.h"

// A chat turn streamed on a session (og_session::chat).
struct og::capi::ChatTurn {
  og::ReplyParser parser;
  int64_t prompt_tokens = 0, cached_tokens = 0;
  bool done = false;
  // What og_session_chat_next handed out last (valid until the next call).
  std::string reasoning, content;
  std::vector<og::ToolCallDelta> calls;
  std::vector<og_chat_call_delta> call_views;
  explicit ChatTurn(og::ReplyParserOptions o) : parser(std::move(o)) {}
};

namespace og::capi {
namespace {

// A model's chat pieces, built on first use and shared by its sessions: the
// tool_use variant, what replies hold, and the grammar vocabularies (a large
// vocabulary's index takes a moment).
struct ChatAssets {
  ModelChat chat;  // runtime/model_chat.h: the setup every front end assembles the same way
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const grammar::TokenVocab>> vocabs;  // by admitted markers
};

struct AssetsEntry {
  std::weak_ptr<ModelCore> core;
  std::shared_ptr<ChatAssets> assets;
};

std::shared_ptr<ChatAssets> build_assets(const ModelCore& core) {
  auto a = std::make_shared<ChatAssets>();
  a->chat = model_chat_of(core.run.loaded);  // a tool_use variant that does not parse: tools use the default
  return a;
}

std::shared_ptr<ChatAssets> assets_of(const std::shared_ptr<ModelCore>& core) {
  static std::mutex mu;
  static std::map<const ModelCore*, AssetsEntry> all;
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = all.begin(); it != all.end();) it = it->second.core.expired() ? all.erase(it) : std::next(it);
  AssetsEntry& e = all[core.get()];
  if (!e.assets) e = AssetsEntry{core, build_assets(*core)};
  return e.assets;
}

}  // namespace

std::shared_ptr<const ChatSetup> chat_setup_of(const std::shared_ptr<ModelCore>& core) {
  std::shared_ptr<ChatAssets> a = assets_of(core);
  return std::shared_ptr<const ChatSetup>(a, &a->chat.setup);
}

namespace {

std::shared_ptr<const grammar::TokenVocab> vocab_of(ChatAssets& a, const Tokenizer& tok,
                                                    const std::vector<std::string>& admitted) {
  std::string key;
  for (const std::string& m : admitted) key += m + '\n';
  std::lock_guard<std::mutex> lock(a.mu);
  auto& v = a.vocabs[key];
  if (!v) v = admitted.empty() ? grammar_vocab(tok) : grammar_vocab(tok, admitted);
  return v;
}

// The plan's grammar (compiled by the planning, never again here) with the
// vocabulary the server would use.
GrammarConstraint constraint_of(const ChatPlan& p, ChatAssets& a, const Tokenizer& tok) {
  GrammarConstraint c;
  OG_CHECK(p.grammar, "a chat plan with a grammar text carries it compiled");
  c.grammar = p.grammar;
  std::vector<std::string> admitted;
  if (!p.markers.empty() && !p.tool_markers.empty() && has_control_token(tok, p.tool_markers))
    admitted = p.tool_markers;
  else if (!p.markers.empty() && has_control_token(tok, p.markers))
    admitted = p.markers;
  c.vocab = vocab_of(a, tok, admitted);
  if (p.reasoning.active) {
    c.reasoning.open = p.reasoning.open;
    c.reasoning.close = p.reasoning.close;
    c.reasoning.starts_open = p.reasoning.starts_open;
    c.reasoning.max_tokens = p.reasoning.max_tokens;
  }
  return c;
}

std::string text_at(const char* s) { return s ? s : ""; }
std::optional<std::string> opt_at(const char* s) { return s ? std::optional<std::string>(s) : std::nullopt; }

ToolChoice tool_choice_of(const char* s) {
  const std::string v = s;
  if (v == "none") return {ToolChoice::Kind::kNone, ""};
  if (v == "auto") return {ToolChoice::Kind::kAuto, ""};
  if (v == "required") return {ToolChoice::Kind::kRequired, ""};
  return {ToolChoice::Kind::kFunction, v};
}

ChatRequestMessage message_of(const og_chat_msg& m, size_t i) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.role) api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, ".role' is required (NULL)");
  ChatRequestMessage r;
  r.role = m.role;
  r.content = opt_at(m.content);
  r.reasoning_content = opt_at(m.reasoning_content);
  r.name = opt_at(m.name);
  r.tool_call_id = opt_at(m.tool_call_id);
  if (m.n_tool_calls > 0 && !m.tool_calls) api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, ".tool_calls' is NULL");
  for (size_t j = 0; j < m.n_tool_calls; ++j)
    r.tool_calls.push_back({text_at(m.tool_calls[j].id), text_at(m.tool_calls[j].name), text_at(m.tool_calls[j].arguments)});
  return r;
}

ChatRequest request_of(const og_chat_request& q) {
  ChatRequest r;
  if (q.n_messages > 0 && !q.messages) api_fail(OG_ERR_INVALID_ARGUMENT, "'messages' is NULL");
  for (size_t i = 0; i < q.n_messages; ++i) r.messages.push_back(message_of(q.messages[i], i));
  if (q.n_tools > 0 && !q.tools) api_fail(OG_ERR_INVALID_ARGUMENT, "'tools' is NULL");
  for (size_t i = 0; i < q.n_tools; ++i)
    r.tools.push_back({text_at(q.tools[i].name), opt_at(q.tools[i].description), text_at(q.tools[i].parameters),
                       q.tools[i].strict != 0});
  if (q.tool_choice) r.tool_choice = tool_choice_of(q.tool_choice);
  r.parallel_tool_calls = q.parallel_tool_calls != 0;
  const std::string rf = text_at(q.response_format);
  if (rf == "json_object") {
    r.response_format.kind = ResponseFormat::Kind::kJsonObject;
  } else if (rf == "json_schema") {
    if (!q.json_schema) api_fail(OG_ERR_INVALID_ARGUMENT, "'response_format' is json_schema and 'json_schema' is NULL");
    r.response_format.kind = ResponseFormat::Kind::kJsonSchema;
    r.response_format.schema = q.json_schema;
    r.response_format.strict = q.json_schema_strict != 0;
  } else if (!rf.empty() && rf != "text") {
    api_fail(OG_ERR_INVALID_ARGUMENT, "'response_format' is '", rf, "': expected text, json_object or json_schema");
  }
  if (q.grammar) {
    if (r.response_format.kind != ResponseFormat::Kind::kText)
      api_fail(OG_ERR_INVALID_ARGUMENT, "'grammar' and 'response_format' both constrain the reply: give one");
    r.response_format.kind = ResponseFormat::Kind::kGrammar;
    r.response_format.grammar = q.grammar;
  }
  if (q.max_reasoning_tokens < -1)
    api_fail(OG_ERR_INVALID_ARGUMENT, "'max_reasoning_tokens' is ", q.max_reasoning_tokens,
             ": -1 (the default, 1024) or 0 and more");
  if (q.max_reasoning_tokens >= 0) r.max_reasoning_tokens = q.max_reasoning_tokens;
  r.chat_template_kwargs = text_at(q.chat_template_kwargs);
  r.reasoning_effort = opt_at(q.reasoning_effort);
  return r;
}

// Starts the turn (the session held, no stream running).
void chat_start_held(og_session* session, const og_chat_request* req, const og_generate_options* opts) {
  need(req, "req");
  no_stream(session);
  og_chat_request q;
  og_chat_request_init(&q);
  read_options(req, &q, "og_chat_request");
  og_generate_options o;
  og_generate_options_init(&o);
  read_options(opts, &o, "og_generate_options");
  check_generate_options(o);
  const std::shared_ptr<ChatAssets> assets = assets_of(session->core);
  const Tokenizer& tok = session->core->tok();
  Session& s = *session->s;
  // The whole conversation rendered and what the history shares with it
  // (runtime/chat_turn.h, as `offgraph chat` plans its turns), with the
  // request's images placed (runtime/chat_images.h; each encoded once per
  // session, a bad one refused naming images[k] before anything changes).
  ImageChatTurn image_turn;
  const ChatTurnPrompt& turn_prompt = image_turn.turn;
  try {
    ChatRequest r = request_of(q);
    add_chat_images(session, q, r);
    image_turn = plan_image_chat_turn(r, assets->chat.setup, tok, s, session->core->run.loaded.vision.get(),
                                      &session->images);
    // The cache holds this conversation's images only (a long-lived session sees many).
    session->images.keep_only(chat_images(r));
  } catch (const ChatRequestError& e) {
    api_fail(OG_ERR_INVALID_ARGUMENT, e.what());
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    if (q.n_images == 0) throw;
    api_fail(OG_ERR_INVALID_ARGUMENT, e.what());  // a template that does not place the images
  }
  const ChatPlan& plan = turn_prompt.plan;
  const std::vector<int32_t>& ids = turn_prompt.ids;
  if (ids.empty()) api_fail(OG_ERR_INVALID_ARGUMENT, "'messages' render to no tokens");
  // Everything that may refuse the request comes before the history is touched.
  GrammarConstraint constraint;
  if (!plan.grammar_text.empty()) constraint = constraint_of(plan, *assets, tok);
  // The conversation is the whole prompt (its kept prefix is part of it): the server's rule and words.
  if (const std::string e = prompt_room_error(0, static_cast<int64_t>(ids.size()), s.capacity()); !e.empty())
    api_fail(OG_ERR_CAPACITY, e, " (raise kv_max_capacity)");
  // Keep what the history shares with the new prompt; at least one token is prefilled.
  const int64_t keep = turn_prompt.keep;
  if (keep < s.position()) {
    keep_shared_prefix(s, turn_prompt);
    auto& m = session->undo_marks;
    while (!m.empty() && m.back() >= keep) m.pop_back();
    logits_changed(session, false);
  }
  const bool special_text = plan.special_text;
  const std::vector<int32_t>& model_stops = session->core->run.loaded.stop_ids;
  auto turn = std::make_shared<ChatTurn>(plan.reply);
  turn->prompt_tokens = static_cast<int64_t>(ids.size());
  turn->cached_tokens = static_cast<int64_t>(keep);
  std::span<const int32_t> added = turn_prompt.added();
  // With images the rest of the prompt goes in pending, each image whole, and the turn prefills it.
  if (!image_turn.prompt.images.empty()) {
    append_image_prompt(s, image_turn.prompt, keep, session->core->run.loaded.model->config().d_model);
    added = {};
  }
  auto adjust = [&](GenerateOptions& g) {
    g.special_text = special_text;
    if (constraint.grammar) {
      g.grammar = constraint;
      // A complete constrained reply ends on a stop id (as the server keeps them).
      if (g.stop_ids.empty()) g.stop_ids = model_stops;
    }
  };
  try {
    stream_start_held(session, added.data(), added.size(), o, adjust);
  } catch (...) {
    if (!image_turn.prompt.images.empty() && !s.in_turn()) s.rewind_to(keep);  // the pending prompt goes too
    throw;
  }
  // The turn's undo mark is where its prompt began, before the pending images.
  if (!image_turn.prompt.images.empty()) session->undo_marks.back() = keep;
  session->chat = std::move(turn);
}

void take_delta(ChatTurn& t, ReplyDelta d) {
  t.reasoning += d.reasoning;
  t.content += d.content;
  for (ToolCallDelta& c : d.tool_calls) t.calls.push_back(std::move(c));
}

void chat_next_held(og_session* session, og_chat_delta* out, int* done) {
  need(out, "out");
  need(done, "done");
  ChatTurn* t = session->chat.get();
  if (!t || !session->stream) api_fail(OG_ERR_STATE, "no chat is running in this session (og_session_chat_start)");
  t->reasoning.clear();
  t->content.clear();
  t->calls.clear();
  int32_t token = -1;
  const char* text = nullptr;
  size_t len = 0;
  int d = 0;
  try {
    stream_next_held(session, &token, &text, &len, &d);
  } catch (...) {
    if (!session->stream) session->chat.reset();
    throw;
  }
  if (len > 0) take_delta(*t, t->parser.feed(std::string_view(text, len)));
  if (d && !t->done) {
    take_delta(*t, t->parser.finish());
    t->done = true;
  }
  t->call_views.clear();
  for (const ToolCallDelta& c : t->calls)
    t->call_views.push_back({c.index, c.id.c_str(), c.name.c_str(), c.arguments.c_str()});
  *out = og_chat_delta{t->reasoning.c_str(), t->reasoning.size(), t->content.c_str(), t->content.size(),
                       t->call_views.empty() ? nullptr : t->call_views.data(), t->call_views.size()};
  *done = d;
}

og_chat_call* calls_of(const std::vector<ToolCall>& calls) {
  if (calls.empty()) return nullptr;
  auto* out = static_cast<og_chat_call*>(std::calloc(calls.size(), sizeof(og_chat_call)));
  if (!out) throw std::bad_alloc();
  return out;
}

void chat_finish_held(og_session* session, og_chat_result* out) {
  if (out) *out = og_chat_result{};
  std::shared_ptr<ChatTurn> t = std::move(session->chat);
  if (!t) api_fail(OG_ERR_STATE, "no chat is running in this session (og_session_chat_start)");
  og_generation g{};
  stream_finish_held(session, &g);
  if (!t->done) t->parser.finish();
  if (!out) {
    og_generation_free(&g);
    return;
  }
  og_chat_result r{};
  r.generation = g;
  try {
    r.content = make_string(t->parser.content());
    r.reasoning_content = make_string(t->parser.reasoning());
    const std::vector<ToolCall>& calls = t->parser.tool_calls();
    r.tool_calls = calls_of(calls);
    r.n_tool_calls = calls.size();
    for (size_t i = 0; i < calls.size(); ++i) {
      r.tool_calls[i].id = make_string(calls[i].id);
      r.tool_calls[i].name = make_string(calls[i].name);
      r.tool_calls[i].arguments = make_string(calls[i].arguments);
    }
  } catch (...) {
    og_chat_result_free(&r);
    throw;
  }
  const bool length = g.stop_reason == OG_STOP_MAX_TOKENS || g.stop_reason == OG_STOP_CAPACITY;
  r.finish_reason = chat_finish_reason(length, r.n_tool_calls > 0);
  r.prompt_tokens = t->prompt_tokens;
  r.cached_tokens = t->cached_tokens;
  r.completion_tokens = static_cast<int64_t>(g.tokens.n);
  *out = r;
}

}  // namespace
}  // namespace og::capi

using namespace og;
using namespace og::capi;

extern "C" {

void og_chat_request_init(og_chat_request* req) {
  if (!req) return;
  og_chat_request r{};
  r.struct_size = sizeof(og_chat_request);
  r.parallel_tool_calls = 1;
  r.max_reasoning_tokens = -1;
  *req = r;
}

void og_chat_result_free(og_chat_result* r) {
  if (!r) return;
  og_string_free(&r->content);
  og_string_free(&r->reasoning_content);
  for (size_t i = 0; r->tool_calls && i < r->n_tool_calls; ++i) {
    og_string_free(&r->tool_calls[i].id);
    og_string_free(&r->tool_calls[i].name);
    og_string_free(&r->tool_calls[i].arguments);
  }
  std::free(r->tool_calls);
  r->tool_calls = nullptr;
  r->n_tool_calls = 0;
  og_generation_free(&r->generation);
}

og_status og_session_chat_start(og_session* session, const og_chat_request* req, const og_generate_options* opts) {
  return guarded([&] {
    SessionUse use(session);
    chat_start_held(session, req, opts);
  });
}

og_status og_session_chat_next(og_session* session, og_chat_delta* out, int* done) {
  return guarded([&] {
    SessionUse use(session);
    chat_next_held(session, out, done);
  });
}

og_status og_session_chat_finish(og_session* session, og_chat_result* out) {
  if (out) *out = og_chat_result{};  // zeroed even when the handle is refused
  return guarded([&] {
    SessionUse use(session);
    chat_finish_held(session, out);
  });
}

og_status og_session_chat(og_session* session, const og_chat_request* req, const og_generate_options* opts,
                          og_chat_result* out) {
  if (out) *out = og_chat_result{};  // zeroed even when the handle is refused
  return guarded([&] {
    need(out, "out");
    SessionUse use(session);
    chat_start_held(session, req, opts);
    og_chat_delta d;
    int done = 0;
    try {
      while (!done) chat_next_held(session, &d, &done);
    } catch (...) {
      if (session->stream) {
        og_generation g{};
        stream_finish_held(session, &g);
        og_generation_free(&g);
      }
      session->chat.reset();
      throw;
    }
    chat_finish_held(session, out);
  });
}

}  // extern "C"
