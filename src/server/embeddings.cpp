// The /v1/embeddings route (see embeddings.h): strict parsing of OpenAI's
// input forms, the model and dimension checks, base64 encoding, the body.
#include "server/embeddings.h"

#include <cstring>

#include "base/error.h"
#include "model/config.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "server/generation.h"

namespace og::server {
namespace {

constexpr size_t kMaxInputs = 2048;  // OpenAI's limit on inputs per request

std::vector<int32_t> token_list(const nlohmann::ordered_json& a, const std::string& where) {
  std::vector<int32_t> ids;
  for (const auto& t : a) {
    if (!t.is_number_integer())
      bad_request(where + " must hold token ids (integers), got " + client_text(t.dump()), "input");
    const int64_t v = t.get<int64_t>();
    // A negative id or one past the vocabulary is the embedder's to refuse, in
    // runtime/token_ids.h's words; only what an id cannot be at all stops here.
    if (v < INT32_MIN || v > INT32_MAX)
      bad_request(where + " holds token id " + std::to_string(v) + ", which is out of range", "input");
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) bad_request(where + " is an empty list of token ids", "input");
  return ids;
}

void parse_input(const nlohmann::ordered_json& in, EmbeddingsRequest& r) {
  if (in.is_string()) {
    r.texts.push_back(in.get<std::string>());
  } else if (in.is_array()) {
    if (in.empty()) bad_request("'input' is an empty list", "input");
    if (in.size() > kMaxInputs && !in[0].is_number_integer())
      bad_request("'input' holds " + std::to_string(in.size()) + " inputs, more than " +
                  std::to_string(kMaxInputs), "input");
    if (in[0].is_string()) {
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].is_string())
          bad_request("'input' mixes strings and other values (item " + std::to_string(i) + ")", "input");
        r.texts.push_back(in[i].get<std::string>());
      }
    } else if (in[0].is_number_integer()) {
      r.tokens.push_back(token_list(in, "'input'"));
    } else if (in[0].is_array()) {
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].is_array())
          bad_request("'input' mixes lists of token ids and other values (item " + std::to_string(i) + ")", "input");
        r.tokens.push_back(token_list(in[i], "'input' item " + std::to_string(i)));
      }
    } else {
      bad_request("'input' must be a string, a list of strings, a list of token ids or a list of such lists", "input");
    }
  } else {
    bad_request("'input' must be a string, a list of strings, a list of token ids or a list of such lists", "input");
  }
  for (size_t i = 0; i < r.texts.size(); ++i)
    if (r.texts[i].empty()) bad_request("'input' item " + std::to_string(i) + " is an empty string", "input");
}

std::string base64_of(const float* v, int64_t n) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> b(static_cast<size_t>(n) * 4);
  std::memcpy(b.data(), v, b.size());  // little-endian float32 (x86, arm64)
  std::string out;
  out.reserve((b.size() + 2) / 3 * 4);
  for (size_t i = 0; i < b.size(); i += 3) {
    const uint32_t x = (uint32_t{b[i]} << 16) | (i + 1 < b.size() ? uint32_t{b[i + 1]} << 8 : 0) |
                       (i + 2 < b.size() ? uint32_t{b[i + 2]} : 0);
    out += kAlphabet[(x >> 18) & 63];
    out += kAlphabet[(x >> 12) & 63];
    out += i + 1 < b.size() ? kAlphabet[(x >> 6) & 63] : '=';
    out += i + 2 < b.size() ? kAlphabet[x & 63] : '=';
  }
  return out;
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(const nlohmann::ordered_json& body) {
  EmbeddingsRequest r;
  if (!body.contains("input") || body["input"].is_null()) bad_request("'input' is required", "input");
  parse_input(body["input"], r);
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) bad_request("'model' must be a string", "model");
    r.model = body["model"].get<std::string>();
  }
  if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
    const auto& e = body["encoding_format"];
    if (!e.is_string() || (e != "float" && e != "base64"))
      bad_request("'encoding_format' must be \"float\" or \"base64\", got " + client_text(e.dump()), "encoding_format");
    r.base64 = e == "base64";
  }
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    const auto& d = body["dimensions"];
    if (!d.is_number_integer() || d.get<int64_t>() < 1)
      bad_request("'dimensions' must be a positive integer, got " + client_text(d.dump()), "dimensions");
    r.dimensions = d.get<int64_t>();
  }
  return r;
}

nlohmann::ordered_json embeddings_body(const EmbedResult& r, const std::string& model, bool base64) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.vectors.size(); ++i) {
    const std::vector<float>& v = r.vectors[i];
    nlohmann::ordered_json e = {{"object", "embedding"}, {"index", i}};
    const int64_t rows = r.dim > 0 ? static_cast<int64_t>(v.size()) / r.dim : 0;
    if (base64) {
      e["embedding"] = base64_of(v.data(), static_cast<int64_t>(v.size()));
    } else if (rows == 1) {
      e["embedding"] = v;
    } else {  // pooling none: one vector per token
      nlohmann::ordered_json m = nlohmann::ordered_json::array();
      for (int64_t k = 0; k < rows; ++k) m.push_back(std::vector<float>(v.begin() + k * r.dim, v.begin() + (k + 1) * r.dim));
      e["embedding"] = m;
    }
    data.push_back(std::move(e));
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", r.prompt_tokens}, {"total_tokens", r.prompt_tokens}}}};
}

EmbedResult embed_for(const ServedModel& m, const std::vector<std::vector<int32_t>>& inputs, int64_t dimensions) {
  if (m.embedder == nullptr)
    bad_request("the model '" + m.id + "' is not an embedding model (its file declares no pooling type), so it "
                "has no embeddings", "model", "model_not_embedding");
  if (m.embedder->model().config().pooling == Pooling::kNone)
    bad_request("the model '" + m.id + "' has pooling type none (per-token vectors), which this route does not "
                "serve", "model");
  const int64_t width = m.embedder->dim();
  if (dimensions > width)
    bad_request("'dimensions' " + std::to_string(dimensions) + " is more than the model's embedding width " +
                std::to_string(width), "dimensions");
  EmbedOptions o;
  o.dimensions = dimensions;
  try {
    return m.embedder->embed(inputs, o);
  } catch (const og::Error& e) {
    // The embedder's refusals are about the inputs (length, ids, dimensions).
    bad_request(std::string("cannot embed: ") + e.what(), "input");
  }
}

std::string handle_embeddings(const ServedModel& m, const std::string& body) {
  const EmbeddingsRequest r = parse_embeddings_request(parse_json_object(body));
  check_model(r.model, m);
  if (m.embedder == nullptr) embed_for(m, {}, 0);  // the model's refusal before any tokenizing
  std::vector<std::vector<int32_t>> inputs = r.tokens;
  for (size_t i = 0; i < r.texts.size(); ++i) {
    try {
      inputs.push_back(m.tok->encode(r.texts[i], /*add_special=*/true, /*parse_special=*/false));
    } catch (const og::Error& e) {
      bad_request("cannot tokenize 'input' item " + std::to_string(i) + ": " + e.what(), "input");
    }
  }
  const EmbedResult res = embed_for(m, inputs, r.dimensions);
  return embeddings_body(res, m.id, r.base64).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace og::server
