// Builders of OpenAI's response, chunk and error JSON, and SSE framing.
#include "server/api_response.h"

#include <random>

namespace og::server {

using nlohmann::json;

namespace {

const char* object_of(Endpoint ep, bool chunk) {
  if (ep == Endpoint::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

json head(const ResponseMeta& m, bool chunk) {
  json j;
  j["id"] = m.id;
  j["object"] = object_of(m.endpoint, chunk);
  j["created"] = m.created;
  j["model"] = m.model;
  return j;
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json chat_logprobs(const std::vector<TokenLogprobs>& lp) {
  json content = json::array();
  for (const auto& t : lp) {
    json top = json::array();
    for (const auto& a : t.top) top.push_back({{"token", a.token}, {"logprob", a.logprob}, {"bytes", bytes_of(a.token)}});
    content.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", bytes_of(t.token)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const std::vector<TokenLogprobs>& lp, int64_t offset) {
  json tokens = json::array(), token_lp = json::array(), top = json::array(), offsets = json::array();
  for (const auto& t : lp) {
    tokens.push_back(t.token);
    // An echoed prompt's first token has no logprob (nothing precedes it).
    if (!t.known) {
      token_lp.push_back(nullptr);
      top.push_back(nullptr);
    } else {
      token_lp.push_back(t.logprob);
      json alts = json::object();
      for (const auto& a : t.top) alts[a.token] = a.logprob;
      top.push_back(alts);
    }
    offsets.push_back(offset);
    offset += static_cast<int64_t>(t.token.size());
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lp}, {"top_logprobs", top}, {"text_offset", offsets}};
}

const char* type_of_status(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 413: return "invalid_request_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string new_response_id(Endpoint ep) {
  thread_local std::mt19937_64 rng{(uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  static const char* kHex = "0123456789abcdef";
  std::string id = ep == Endpoint::kChat ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
  return id;
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json logprobs_json(Endpoint ep, const std::vector<TokenLogprobs>& lp, int64_t offset0) {
  return ep == Endpoint::kChat ? chat_logprobs(lp) : completion_logprobs(lp, offset0);
}

namespace {

json choice_json(const ResponseMeta& m, const CompletionResult& r, int index) {
  json choice = {{"index", index}, {"finish_reason", r.finish_reason}};
  choice["logprobs"] = r.with_logprobs ? logprobs_json(m.endpoint, r.logprobs) : json(nullptr);
  if (m.endpoint == Endpoint::kChat) {
    json msg = {{"role", "assistant"}};
    // OpenAI's shape: content null when the reply is only tool calls.
    msg["content"] = r.text.empty() && !r.tool_calls.empty() ? json(nullptr) : json(r.text);
    if (!r.reasoning.empty()) msg["reasoning_content"] = r.reasoning;
    if (!r.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCall& c : r.tool_calls)
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      msg["tool_calls"] = std::move(calls);
    }
    choice["message"] = std::move(msg);
  } else {
    choice["text"] = r.text;
  }
  return choice;
}

}  // namespace

std::string completion_body(const ResponseMeta& m, const CompletionResult& r) {
  return completion_body(m, std::vector<CompletionResult>{r}, r.usage);
}

std::string completion_body(const ResponseMeta& m, const std::vector<CompletionResult>& choices, const Usage& usage) {
  json j = head(m, false);
  json arr = json::array();
  for (size_t i = 0; i < choices.size(); ++i) arr.push_back(choice_json(m, choices[i], static_cast<int>(i)));
  j["choices"] = std::move(arr);
  j["usage"] = usage_json(usage);
  return dump_json(j);
}

std::string chunk_role(const ResponseMeta& m, bool include_usage, int index) {
  json j = head(m, true);
  j["choices"] = json::array({{{"index", index},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  if (include_usage) j["usage"] = nullptr;
  return dump_json(j);
}

std::string chunk_text(const ResponseMeta& m, std::string_view text, const std::vector<TokenLogprobs>* lp,
                       bool include_usage, int64_t text_offset, int index) {
  json j = head(m, true);
  json choice = {{"index", index}, {"finish_reason", nullptr}};
  choice["logprobs"] = lp ? logprobs_json(m.endpoint, *lp, text_offset) : json(nullptr);
  if (m.endpoint == Endpoint::kChat) {
    choice["delta"] = {{"content", std::string(text)}};
  } else {
    choice["text"] = std::string(text);
  }
  j["choices"] = json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return dump_json(j);
}

namespace {

std::string chat_delta_chunk(const ResponseMeta& m, json delta, const std::vector<TokenLogprobs>* lp,
                             bool include_usage, int index) {
  json j = head(m, true);
  json choice = {{"index", index}, {"delta", std::move(delta)}, {"finish_reason", nullptr}};
  choice["logprobs"] = lp && !lp->empty() ? logprobs_json(m.endpoint, *lp) : json(nullptr);
  j["choices"] = json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return dump_json(j);
}

}  // namespace

std::string chunk_reasoning(const ResponseMeta& m, std::string_view text, const std::vector<TokenLogprobs>* lp,
                            bool include_usage, int index) {
  return chat_delta_chunk(m, {{"reasoning_content", std::string(text)}}, lp, include_usage, index);
}

std::string chunk_tool_call(const ResponseMeta& m, const ToolCallDelta& d, const std::vector<TokenLogprobs>* lp,
                            bool include_usage, int index) {
  json call = {{"index", d.index}};
  json fn = json::object();
  if (!d.id.empty()) {
    call["id"] = d.id;
    call["type"] = "function";
    fn["name"] = d.name;
  }
  fn["arguments"] = d.arguments;
  call["function"] = std::move(fn);
  return chat_delta_chunk(m, {{"tool_calls", json::array({call})}}, lp, include_usage, index);
}

std::string chunk_finish(const ResponseMeta& m, const std::string& finish_reason, bool include_usage, int index) {
  json j = head(m, true);
  json choice = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  if (m.endpoint == Endpoint::kChat) {
    choice["delta"] = json::object();
  } else {
    choice["text"] = "";
  }
  j["choices"] = json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return dump_json(j);
}

std::string chunk_usage(const ResponseMeta& m, const Usage& u) {
  json j = head(m, true);
  j["choices"] = json::array();
  j["usage"] = usage_json(u);
  return dump_json(j);
}

std::string error_body(const ApiError& e) {
  json err = {{"message", e.what()}, {"type", e.type()}};
  err["param"] = e.param().empty() ? json(nullptr) : json(e.param());
  err["code"] = e.code().empty() ? json(nullptr) : json(e.code());
  return dump_json({{"error", err}});
}

std::string error_body(int status, const std::string& message) {
  return error_body(ApiError(status, type_of_status(status), "", message));
}

namespace {
json model_object(const std::string& id, int64_t created, int64_t max_model_len) {
  return {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "offgraph"}, {"max_model_len", max_model_len}};
}
}  // namespace

std::string models_body(const std::string& id, int64_t created, int64_t max_model_len) {
  return dump_json({{"object", "list"}, {"data", json::array({model_object(id, created, max_model_len)})}});
}

std::string model_body(const std::string& id, int64_t created, int64_t max_model_len) {
  return dump_json(model_object(id, created, max_model_len));
}

std::string sse_event(std::string_view payload) {
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t nl = payload.find('\n', start);
    out += "data: ";
    out += payload.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out += '\n';
  return out;
}

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace og::server
