// Request -> RequestOptions against the served model, and the RequestStream
// that hands the scheduler's callbacks to the HTTP thread.
#include "server/generation.h"

#include <algorithm>
#include <mutex>
#include <random>

#include "base/error.h"
#include "chat/chat_request.h"
#include "chat/request_error.h"
#include "runtime/prompt_room.h"
#include "runtime/token_ids.h"
#include "runtime/chat_images.h"
#include "runtime/image_input.h"

namespace og::server {

namespace {

uint64_t random_seed() {
  thread_local std::mt19937_64 rng{(uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  return rng();
}

SamplerConfig sampler_of(const GenerationParams& p, const ServedModel& m) {
  SamplerConfig c = m.sampler;
  if (p.temperature) c.temperature = *p.temperature;
  if (p.top_p) c.top_p = *p.top_p;
  if (p.top_k) c.top_k = static_cast<int>(*p.top_k);
  if (p.min_p) c.min_p = *p.min_p;
  if (p.repetition_penalty) c.repeat_penalty = *p.repetition_penalty;
  if (p.presence_penalty) c.presence_penalty = *p.presence_penalty;
  if (p.frequency_penalty) c.frequency_penalty = *p.frequency_penalty;
  for (const auto& [id, b] : p.logit_bias) c.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
  if (p.seed) {
    c.seed = *p.seed;
  } else if (m.random_seed) {
    c.seed = random_seed();
  }
  return c;
}

}  // namespace

void check_model(const std::string& requested, const ServedModel& m) {
  if (requested.empty() || requested == m.id) return;
  // 404 as OpenAI answers it (its clients raise NotFoundError for it).
  throw ApiError(404, "invalid_request_error", "model_not_found",
                 "The model " + client_text(requested) +
                     " does not exist or you do not have access to it; this server serves '" + m.id + "'",
                 "model");
}

namespace {

// A ChatRequestError's field as the 400's param: up to the first space or
// control byte (a client's property name may hold them), at most 200 bytes.
std::string param_of(std::string_view field) {
  size_t n = 0;
  while (n < field.size() && n < 200 && static_cast<unsigned char>(field[n]) > 0x20) ++n;
  return std::string(field.substr(0, utf8_prefix(field, n)));
}

// What the chat planning refuses (chat/chat_request.h) as the 400 naming its field.
[[noreturn]] void refused(const ChatRequestError& e) { bad_request(e.what(), param_of(e.field()), e.code()); }

// The served model's chat as the planning reads it, its refusals worded for this server.
ChatSetup chat_setup(const ServedModel& m) {
  ChatSetup s;
  s.format = m.tmpl;
  s.tool_use = m.tool_use;
  s.reply_format = m.reply_format;
  s.parse_reasoning = m.parse_reasoning;
  s.renderer = "this server";
  s.jinja_hint = "serve a model that ships one with --chat auto, or give --chat-template-file";
  return s;
}

// A chat request's planning inputs (the forms its parse built; no copies).
ChatPlanInput chat_input(const GenerationRequest& req) {
  ChatPlanInput in;
  in.messages = &req.forms.messages;
  in.template_request = &req.forms.template_request;
  in.needs_jinja = req.forms.needs_jinja;
  in.has_tools = !req.chat.tools.empty();
  in.choice = tool_choice_of(req.chat);
  in.parallel_tool_calls = req.chat.parallel_tool_calls;
  in.structured.text = req.params.grammar_text;
  in.structured.from = req.params.grammar_from;
  in.structured.grammar = req.params.grammar;  // compiled by the parse: the planning reuses it
  in.max_reasoning_tokens = req.params.max_reasoning_tokens;
  return in;
}

}  // namespace

std::string request_text(const ServedModel& m, const nlohmann::ordered_json& request, bool has_tools) {
  const ChatFormat& f = has_tools && m.tool_use ? *m.tool_use : *m.tmpl;
  try {
    return f.render_request(jinja_request(m, request));
  } catch (const ChatRequestError& e) {
    refused(render_refusal(f, e));
  }
}

nlohmann::ordered_json jinja_request(const ServedModel& m, const nlohmann::ordered_json& template_request) {
  return template_request_for(chat_setup(m), template_request);
}

ChatSegments chat_segments(const ServedModel& m, const nlohmann::ordered_json& template_request,
                           const std::vector<ChatMessage>& messages, const std::string& needs_jinja, bool has_tools,
                           bool add_generation_prompt) {
  ChatPlanInput in;
  in.messages = &messages;
  in.template_request = &template_request;
  in.needs_jinja = needs_jinja;
  in.has_tools = has_tools;
  in.add_generation_prompt = add_generation_prompt;
  try {
    return render_chat(in, chat_setup(m));
  } catch (const ChatRequestError& e) {
    refused(e);
  }
}

ChatSegments chat_segments(const ServedModel& m, const ChatRequest& chat, const ChatRenderForms& forms) {
  return chat_segments(m, forms.template_request, forms.messages, forms.needs_jinja, !chat.tools.empty(),
                       chat.add_generation_prompt);
}

namespace {

// A completion prompt's ids: given ids (checked), or its text encoded (with
// the vocabulary's BOS unless it is the prefix of a FIM prompt).
std::vector<int32_t> completion_ids(const GenerationRequest& req, const ServedModel& m, size_t index) {
  const CompletionPrompt& cp = req.prompts.at(index);
  const std::string name = req.prompts.size() > 1 ? "prompt[" + std::to_string(index) + "]" : "prompt";
  if (!cp.is_ids) return m.tok->encode(cp.text, /*add_special=*/!req.has_suffix, /*parse_special=*/false);
  if (const auto bad = first_bad_token_id(cp.ids, m.tok->n_vocab()))
    bad_request("'" + name + "[" + std::to_string(bad->index) + "]': " + bad->message, "prompt");
  return std::vector<int32_t>(cp.ids.begin(), cp.ids.end());
}

// [BOS] <fim_pre> prefix <fim_suf> suffix <fim_mid>: the prefix-suffix-middle
// order the FIM-trained code models use.
std::vector<int32_t> fim_ids(const GenerationRequest& req, const ServedModel& m, std::vector<int32_t> prefix) {
  const SpecialTokens& s = m.tok->special();
  if (s.fim_pre < 0 || s.fim_suf < 0 || s.fim_mid < 0)
    bad_request("'suffix' asks for fill-in-the-middle, and this model's vocabulary has no FIM tokens "
                "(prefix/suffix/middle markers such as <|fim_prefix|>)",
                "suffix", "unsupported_parameter");
  std::vector<int32_t> ids;
  if (s.add_bos && s.bos >= 0) ids.push_back(s.bos);
  ids.push_back(s.fim_pre);
  ids.insert(ids.end(), prefix.begin(), prefix.end());
  ids.push_back(s.fim_suf);
  const std::vector<int32_t> suffix = m.tok->encode(req.suffix, /*add_special=*/false, /*parse_special=*/false);
  ids.insert(ids.end(), suffix.begin(), suffix.end());
  ids.push_back(s.fim_mid);
  return ids;
}

// One image encode at a time in the process: the tower's matrix products
// already use every core, and a burst of image requests must not starve the
// scheduler's steps of them more than one encode does.
std::mutex& encode_gate() {
  static std::mutex mu;
  return mu;
}

// The request's images through the tower (400 naming the part when there is
// no tower or an image does not decode), placed at the template's markers.
std::vector<int32_t> image_prompt_ids(const GenerationRequest& req, const ServedModel& m, const ChatSegments& segs,
                                      std::vector<RequestImage>* images) {
  if (!images) bad_request("this endpoint takes no images", "messages", "unsupported_parameter");
  std::vector<std::shared_ptr<const TowerImage>> encoded;
  try {
    std::lock_guard<std::mutex> lk(encode_gate());
    encoded = encode_chat_images(req.chat, m.vision);
  } catch (const ChatRequestError& e) {
    refused(e);
  }
  ImagePrompt p = image_prompt_of(segs, *m.tok, *m.vision, encoded, true);
  images->clear();
  for (size_t i = 0; i < p.images.size(); ++i)
    images->push_back(RequestImage{p.images[i].position, encoded[i], p.placeholder, p.bidirectional});
  return std::move(p.tokens);
}

}  // namespace

std::vector<int32_t> encode_prompt(const GenerationRequest& req, const ServedModel& m, std::string* rendered,
                                   size_t index, std::vector<RequestImage>* images) {
  std::vector<int32_t> ids;
  if (req.endpoint == Endpoint::kChat && !m.vision) {
    try {
      encode_chat_images(req.chat, nullptr);  // with images: a 400 naming the first, before any render
    } catch (const ChatRequestError& e) {
      refused(e);
    }
  }
  try {
    if (req.endpoint == Endpoint::kChat) {
      const ChatSegments segs = chat_segments(m, req.chat, req.forms);
      if (rendered) *rendered = chat_text(segs);
      if (!chat_images(req.chat).empty()) ids = image_prompt_ids(req, m, segs, images);
      else ids = encode_chat(*m.tok, segs, true);
    } else {
      ids = completion_ids(req, m, index);
      if (req.has_suffix) ids = fim_ids(req, m, std::move(ids));
    }
  } catch (const og::Error& e) {
    bad_request(std::string("the prompt cannot be encoded: ") + e.what(),
                req.endpoint == Endpoint::kChat ? "messages" : "prompt");
  }
  if (ids.empty()) bad_request("the prompt is empty (it encodes to no tokens)", "prompt");
  return ids;
}

ReplyParserOptions reply_options(const GenerationRequest& req, const ServedModel& m, const std::string& rendered) {
  if (req.endpoint == Endpoint::kChat) return chat_reply_options(chat_input(req), chat_setup(m), rendered);
  ReplyParserOptions o;
  o.parse_tools = o.parse_reasoning = false;
  return o;
}

bool reply_needs_special_text(const ReplyParserOptions& o) { return reply_keeps_special_text(o); }

RequestOptions build_request_options(const GenerationRequest& req, const ServedModel& m, std::vector<int32_t> prompt) {
  const int64_t choices = req.params.n;
  if (choices > m.max_n)
    bad_request("'n' is " + std::to_string(choices) + "; this server returns at most " + std::to_string(m.max_n) +
                    " choices per request (--max-n)",
                "n");
  if (m.max_sequences > 0 && choices > m.max_sequences)
    bad_request("'n' is " + std::to_string(choices) + "; this server decodes " + std::to_string(m.max_sequences) +
                    " sequences at once (--parallel) and a request's choices decode side by side",
                "n");
  const int64_t n = static_cast<int64_t>(prompt.size()), limit = m.max_session_tokens;
  // The one rule and message of a prompt's room (runtime/prompt_room.h), the library's and the commands' too.
  if (const std::string e = prompt_room_error(0, n, limit); !e.empty())
    bad_request(e + " (serve --max-session-tokens)", req.endpoint == Endpoint::kChat ? "messages" : "prompt",
                "context_length_exceeded");
  int64_t max_new = 0;
  if (req.params.max_tokens) {
    max_new = *req.params.max_tokens;
    if (n + max_new > limit)
      bad_request("the prompt (" + std::to_string(n) + " tokens) + max_tokens (" + std::to_string(max_new) +
                      ") exceeds this server's session limit of " + std::to_string(limit) + " tokens",
                  "max_tokens", "context_length_exceeded");
  } else {
    const int64_t def = req.endpoint == Endpoint::kChat ? m.default_max_tokens : m.default_completion_max_tokens;
    max_new = def > 0 ? std::min(def, limit - n) : limit - n;
  }
  for (const auto& entry : req.params.logit_bias)
    if (const std::string wrong = token_id_error(entry.first, m.tok->n_vocab()); !wrong.empty())
      bad_request("'logit_bias': " + wrong, "logit_bias");
  RequestOptions o;
  o.prompt = std::move(prompt);
  o.max_new_tokens = max_new;
  o.sampler = sampler_of(req.params, m);
  if (!req.params.ignore_eos) o.stop_ids = m.stop_ids;
  o.stop_strings = req.params.stop;
  o.logprobs = req.params.logprobs;
  o.top_logprobs = req.params.top_logprobs;
  o.use_prefix_cache = m.use_prefix_cache;
  o.cache_salt = req.params.cache_salt;
  return o;
}

namespace {

ReasoningLimit limit_of(const ChatReasoningLimit& l) {
  if (!l.active) return {};
  return ReasoningLimit{l.open, l.close, l.starts_open, l.max_tokens};
}

}  // namespace

void set_grammar(const GenerationRequest& req, const ServedModel& m, const ReplyParserOptions& reply,
                 RequestOptions& o) {
  if (req.endpoint != Endpoint::kChat) {
    if (!req.params.grammar) return;
    o.grammar.grammar = req.params.grammar;
    o.grammar.vocab = m.grammar_vocab ? m.grammar_vocab : grammar_vocab(*m.tok);
    if (o.stop_ids.empty()) o.stop_ids = m.stop_ids;
    return;
  }
  ChatConstraint c;
  try {
    c = plan_constraint(chat_input(req), reply);
  } catch (const ChatRequestError& e) {
    refused(e);
  } catch (const og::Error& e) {  // a tool grammar that does not compile is this server's fault
    throw ApiError(500, "server_error", "", e.what());
  }
  if (c.grammar_text.empty()) return;
  // The planning's compiled grammar: the parse's (the structured output as
  // given) or the one it compiled (after the reasoning, a tool grammar).
  o.grammar.grammar = c.grammar;
  o.grammar.reasoning = limit_of(c.reasoning);
  // The vocabulary admits the control tokens the grammar writes: the
  // tool-call format's (built once) when they include the grammar's, else
  // the grammar's own when the tokenizer has any, else none.
  if (!c.markers.empty() && m.tool_grammar_vocab && !c.tool_markers.empty())
    o.grammar.vocab = m.tool_grammar_vocab;
  else if (!c.markers.empty() && has_control_token(*m.tok, c.markers))
    o.grammar.vocab = grammar_vocab(*m.tok, c.markers);
  else
    o.grammar.vocab = m.grammar_vocab ? m.grammar_vocab : grammar_vocab(*m.tok);
  if (o.stop_ids.empty()) o.stop_ids = m.stop_ids;
}

std::string openai_finish_reason(FinishReason r) { return r == FinishReason::kLength ? "length" : "stop"; }

RequestStream::RequestStream(const ServedModel& m, ServerMetrics* metrics, Endpoint endpoint, bool logprobs, int n)
    : model_(m), metrics_(metrics), endpoint_(endpoint), logprobs_(logprobs),
      choices_(static_cast<size_t>(std::max(1, n))), unfinished_(std::max(1, n)) {}

std::vector<RequestCallbacks> RequestStream::callbacks(const std::shared_ptr<RequestStream>& self) {
  std::vector<RequestCallbacks> all;
  for (int c = 0; c < self->choices(); ++c) {
    RequestCallbacks cb;
    cb.on_text = [self, c](std::string_view t) { self->on_text(c, t); };
    cb.on_token = [self, c](const TokenEvent& ev) { self->on_token(c, ev); };
    cb.on_prompt_token = [self, c](const TokenEvent& ev) { self->on_prompt_token(c, ev); };
    cb.on_finish = [self, c](const RequestReport& r) { self->on_finish(c, r); };
    all.push_back(std::move(cb));
  }
  return all;
}

TokenLogprobs RequestStream::to_logprobs(const TokenEvent& ev) const {
  TokenLogprobs t;
  t.token = model_.tok->token_bytes(ev.id);
  t.logprob = ev.logprob;
  for (const auto& a : ev.top) t.top.push_back({model_.tok->token_bytes(a.id), a.logprob});
  return t;
}

void RequestStream::on_text(int c, std::string_view text) {
  if (text.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Choice& ch = choices_[c];
    Piece p;
    p.text = std::string(text);
    p.logprobs = std::move(ch.pending_lp);
    ch.pending_lp.clear();
    ch.pieces.push_back(std::move(p));
  }
  cv_.notify_all();
}

void RequestStream::on_token(int c, const TokenEvent& ev) {
  const auto now = std::chrono::steady_clock::now();
  // A stop id ends the reply and is not part of it: no logprob is reported for it.
  const bool is_stop = std::find(model_.stop_ids.begin(), model_.stop_ids.end(), ev.id) != model_.stop_ids.end();
  TokenLogprobs lp;
  if (logprobs_ && !is_stop) lp = to_logprobs(ev);
  std::lock_guard<std::mutex> lock(mu_);
  Choice& ch = choices_[c];
  if (metrics_ && ch.any_token)
    metrics_->inter_token_s.observe(std::chrono::duration<double>(now - ch.last_token).count());
  ch.last_token = now;
  ch.any_token = true;
  if (logprobs_ && !is_stop) ch.pending_lp.push_back(std::move(lp));
}

void RequestStream::on_prompt_token(int c, const TokenEvent& ev) {
  TokenLogprobs lp = to_logprobs(ev);
  std::lock_guard<std::mutex> lock(mu_);
  choices_[c].prompt_lp.push_back(std::move(lp));
}

std::vector<TokenLogprobs> RequestStream::prompt_logprobs(int c) const {
  std::lock_guard<std::mutex> lock(mu_);
  return choices_.at(static_cast<size_t>(c)).prompt_lp;
}

// One request's metrics from its choices' reports: counted by the first
// reason that is not a normal finish (else choice 0's); latencies of the
// request (first token of any choice, finish of the last); tokens of all.
void RequestStream::record_metrics(const std::vector<RequestReport>& reports) const {
  const RequestReport* why = &reports[0];
  for (const RequestReport& r : reports)
    if (r.reason != FinishReason::kStop && r.reason != FinishReason::kLength) {
      why = &r;
      break;
    }
  metrics_->count_request(endpoint_ == Endpoint::kChat ? "chat" : "completion", finish_reason_name(why->reason));
  if (why->reason != FinishReason::kStop && why->reason != FinishReason::kLength) return;
  const RequestReport& first = reports[0];
  double ttft = first.ttft_s, total = first.total_s, decode = first.decode_s;
  for (const RequestReport& r : reports) {
    ttft = std::min(ttft, r.ttft_s);
    total = std::max(total, r.total_s);
    decode = std::max(decode, r.decode_s);
  }
  metrics_->ttft_s.observe(ttft);
  metrics_->e2e_s.observe(total);
  metrics_->queue_s.observe(first.queue_s);
  metrics_->prefill_s.observe(first.prefill_s);
  metrics_->decode_s.observe(decode);
  const Usage u = per_prompt_ > 0 ? usage_of(reports, per_prompt_) : usage_of(reports);
  metrics_->prompt_tokens.observe(static_cast<double>(u.prompt_tokens));
  metrics_->generation_tokens.observe(static_cast<double>(u.completion_tokens));
}

void RequestStream::on_finish(int c, const RequestReport& r) {
  // The last choice's report is published after the metrics, so a client that
  // has its reply finds the request counted.
  std::vector<RequestReport> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unfinished_ == 1) {
      for (size_t i = 0; i < choices_.size(); ++i)
        all.push_back(static_cast<int>(i) == c ? r : *choices_[i].report);
    } else {
      choices_[c].report = r;
      --unfinished_;
    }
  }
  if (!all.empty()) {
    if (metrics_) record_metrics(all);
    std::lock_guard<std::mutex> lock(mu_);
    choices_[c].report = r;
    --unfinished_;
  }
  cv_.notify_all();
}

bool RequestStream::news() const {
  for (const Choice& ch : choices_)
    if (!ch.pieces.empty() || (ch.report && !ch.report_taken)) return true;
  return false;
}

std::vector<StreamUpdate> RequestStream::take(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, wait, [&] { return news(); });
  std::vector<StreamUpdate> out;
  for (size_t c = 0; c < choices_.size(); ++c) {
    Choice& ch = choices_[c];
    if (ch.pieces.empty() && !(ch.report && !ch.report_taken)) continue;
    StreamUpdate u;
    u.choice = static_cast<int>(c);
    u.pieces = std::move(ch.pieces);
    ch.pieces.clear();
    if (ch.report && !ch.report_taken) {
      ch.report_taken = true;
      u.finished = ch.report;
      u.trailing = std::move(ch.pending_lp);
      ch.pending_lp.clear();
    }
    out.push_back(std::move(u));
  }
  return out;
}

bool RequestStream::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unfinished_ == 0;
}

Usage usage_of(const RequestReport& r) {
  Usage u;
  u.prompt_tokens = r.prompt_tokens;
  u.completion_tokens = r.generated_tokens;
  u.cached_tokens = r.cached_tokens;
  return u;
}

Usage usage_of(const std::vector<RequestReport>& choices) {
  Usage u;
  if (choices.empty()) return u;
  u = usage_of(choices[0]);
  for (size_t i = 1; i < choices.size(); ++i) u.completion_tokens += choices[i].generated_tokens;
  return u;
}

Usage usage_of(const std::vector<RequestReport>& choices, int per_prompt) {
  Usage u;
  const size_t step = static_cast<size_t>(std::max(1, per_prompt));
  for (size_t at = 0; at < choices.size(); at += step) {
    const std::vector<RequestReport> group(choices.begin() + at, choices.begin() + std::min(choices.size(), at + step));
    const Usage g = usage_of(group);
    u.prompt_tokens += g.prompt_tokens;
    u.completion_tokens += g.completion_tokens;
    u.cached_tokens += g.cached_tokens;
  }
  return u;
}

CompletionResult collect_result(const std::vector<Piece>& pieces, const StreamUpdate& last, bool logprobs,
                                const ReplyParserOptions* parse) {
  CompletionResult c;
  for (const auto& p : pieces) {
    c.text += p.text;
    if (logprobs) c.logprobs.insert(c.logprobs.end(), p.logprobs.begin(), p.logprobs.end());
  }
  if (logprobs) c.logprobs.insert(c.logprobs.end(), last.trailing.begin(), last.trailing.end());
  c.with_logprobs = logprobs;
  if (parse && (parse->parse_tools || parse->parse_reasoning)) {
    ParsedReply r = parse_reply(c.text, *parse);
    c.text = std::move(r.content);
    c.reasoning = std::move(r.reasoning);
    c.tool_calls = std::move(r.tool_calls);
  }
  if (last.finished) {
    c.finish_reason = openai_finish_reason(last.finished->reason);
    if (!c.tool_calls.empty() && last.finished->reason == FinishReason::kStop) c.finish_reason = "tool_calls";
    c.usage = usage_of(*last.finished);
  }
  return c;
}

}  // namespace og::server
