// Scripted synthetic models (og-synth --script): a bigram reply machine written
// into random weights, so that end-to-end tests of chat templates, tool calls
// and reasoning get a chosen reply under greedy decoding.
//
// The residual stream carries only the token embedding: every layer's
// attention output projection and MLP down projection are zero, so the final
// norm sees the embedding of the current token whatever the position and the
// history. Each token with a successor has a one-hot embedding on a dimension
// of its own; the final RMS norm turns it into sqrt(d) * w on that dimension.
// The untied output matrix's column for that dimension is zero except in the
// successor's row, which holds 100 / sqrt(d): the successor's logit is about
// 100 * w (w the final norm weight, near 1) and every other logit exactly 0.
// Everything else stays random. Families with an embedding scale or a logit
// soft-cap (gemma) are refused.
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/hf_config.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

using json = nlohmann::json;

// A token text for messages: JSON-quoted (newlines as \n), shortened.
std::string quoted(const std::string& text) { return json_excerpt(json(text)); }

// GPT-2 byte-level form of text: the piece a byte-level BPE vocabulary stores for it.
std::string byte_level(const std::string& text) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const int cp = printable ? b : 256 + extra++;
      std::string& u = t[static_cast<size_t>(b)];
      if (cp < 0x80) {
        u = std::string(1, static_cast<char>(cp));
      } else {  // two UTF-8 bytes cover every code point up to 0x7FF
        u += static_cast<char>(0xC0 | (cp >> 6));
        u += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    return t;
  }();
  std::string out;
  for (unsigned char c : text) out += table[c];
  return out;
}

std::string script_key(const SynthSpec& s) {
  json j;
  j["tokenizer"] = s.tokenizer;
  j["testdata"] = testdata_dir();
  j["family"] = static_cast<int>(s.family);
  j["d_model"] = s.d_model;
  j["tied"] = s.tied;
  json toks = json::array();
  for (const auto& t : s.script.tokens) toks.push_back({t.text, t.special});
  j["tokens"] = toks;
  j["chains"] = s.script.chains;
  j["source"] = s.script.source;
  return j.dump();
}

std::unique_ptr<ScriptPlan> resolve(const SynthSpec& s) {
  const SynthScript& sc = s.script;
  const std::string& name = sc.source;
  OG_CHECK(s.family == Family::kLlama || s.family == Family::kQwen2 || s.family == Family::kQwen3, name,
           ": a scripted model must be of family llama, qwen2 or qwen3 (no embedding scaling), not ",
           family_name(s.family));
  OG_CHECK(s.tokenizer == "llama3", name, ": a scripted model needs the llama3 tokenizer, not ", s.tokenizer);
  OG_CHECK(!s.tied, name, ": a scripted model needs an untied output matrix");
  OG_CHECK(!sc.chains.empty(), name, ": no chains");

  require(llama3_json());
  const json j = read_json_file(llama3_json());
  const int64_t V = n_vocab(s);
  std::unordered_map<std::string, int64_t> ids;  // text -> id (normal pieces by their bytes, added tokens as they are)
  const json& vocab = j.at("model").at("vocab");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) ids.emplace(it.key(), it->get<int64_t>());
  std::vector<int64_t> reserved;
  std::unordered_map<std::string, int64_t> added;
  for (const json& a : j.at("added_tokens")) {
    const std::string content = a.at("content").get<std::string>();
    const int64_t id = a.at("id").get<int64_t>();
    if (content.rfind("<|reserved_special_token_", 0) == 0) reserved.push_back(id);
    else added.emplace(content, id);
  }
  std::sort(reserved.begin(), reserved.end());
  auto find = [&](const std::string& text) -> int64_t {
    if (auto it = added.find(text); it != added.end()) return it->second;
    if (auto it = ids.find(byte_level(text)); it != ids.end()) return it->second;
    return -1;
  };

  auto plan = std::make_unique<ScriptPlan>();
  std::set<std::string> seen;
  size_t next_slot = 0;
  for (const SynthScript::Token& t : sc.tokens) {
    OG_CHECK(seen.insert(t.text).second, name, ": token ", quoted(t.text), " is listed twice");
    if (find(t.text) >= 0) continue;  // already one token of the vocabulary
    OG_CHECK(next_slot < reserved.size(), name, ": more new tokens than the ", reserved.size(),
             " reserved entries of the llama3 vocabulary");
    const int64_t id = reserved[next_slot++];
    OG_CHECK(id < V, name, ": reserved token id ", id, " is outside the vocabulary");
    plan->placed.push_back({id, t.text, t.special});
    added.emplace(t.text, id);
  }

  std::map<int64_t, std::pair<std::string, size_t>> first_seen;  // a -> (successor's text, chain) for messages
  for (size_t c = 0; c < sc.chains.size(); ++c) {
    const std::vector<std::string>& chain = sc.chains[c];
    std::vector<int64_t> chain_ids;
    for (size_t k = 0; k < chain.size(); ++k) {
      const int64_t id = find(chain[k]);
      OG_CHECK(id >= 0, name, ": chain ", c + 1, " element ", k + 1, ": ", quoted(chain[k]),
               " is not a single token of the llama3 vocabulary (list it in \"tokens\")");
      chain_ids.push_back(id);
    }
    for (size_t k = 0; k + 1 < chain_ids.size(); ++k) {
      const int64_t a = chain_ids[k], b = chain_ids[k + 1];
      auto [it, fresh] = plan->next.emplace(a, b);
      if (fresh) {
        first_seen[a] = {chain[k + 1], c + 1};
        continue;
      }
      OG_CHECK(it->second == b, name, ": conflicting bigrams: ", quoted(chain[k]), " is followed by ",
               quoted(first_seen[a].first), " in chain ", first_seen[a].second, " but by ", quoted(chain[k + 1]),
               " in chain ", c + 1, " (a token has one successor)");
    }
  }
  const int64_t n_sources = static_cast<int64_t>(plan->next.size());
  OG_CHECK(n_sources <= s.d_model, name, ": ", n_sources, " tokens have a successor but d_model is ", s.d_model,
           " (each needs an embedding dimension of its own; raise --d-model)");
  // Dimensions in order of first appearance.
  int64_t d = 0;
  for (const auto& chain : sc.chains)
    for (size_t k = 0; k + 1 < chain.size(); ++k) {
      const int64_t a = find(chain[k]);
      if (!plan->dim.count(a)) plan->dim[a] = d++;
    }
  return plan;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

SynthScript parse_script(const std::string& json_text, const std::string& name) {
  const json j = parse_json_object(json_text, name);
  SynthScript s;
  s.source = name;
  for (auto it = j.begin(); it != j.end(); ++it)
    OG_CHECK(it.key() == "tokens" || it.key() == "chains" || it.key() == "description", name, ": unknown key \"",
             it.key(), "\" (expected tokens, chains, description)");
  if (j.contains("description"))
    OG_CHECK(j["description"].is_string(), name, ": \"description\" must be a string");
  if (j.contains("tokens")) {
    const json& toks = j["tokens"];
    OG_CHECK(toks.is_array(), name, ": \"tokens\" must be an array");
    for (size_t k = 0; k < toks.size(); ++k) {
      const json& t = toks[k];
      SynthScript::Token tok;
      if (t.is_string()) {
        tok.text = t.get<std::string>();
      } else {
        OG_CHECK(t.is_object() && t.contains("text") && t["text"].is_string(), name, ": tokens[", k,
                 "] must be a string or an object with a string \"text\", got ", json_excerpt(t));
        for (auto f = t.begin(); f != t.end(); ++f)
          OG_CHECK(f.key() == "text" || f.key() == "special", name, ": tokens[", k, "]: unknown key \"", f.key(),
                   "\" (expected text, special)");
        tok.text = t["text"].get<std::string>();
        if (t.contains("special")) {
          OG_CHECK(t["special"].is_boolean(), name, ": tokens[", k, "].special must be true or false");
          tok.special = t["special"].get<bool>();
        }
      }
      OG_CHECK(!tok.text.empty(), name, ": tokens[", k, "] is empty");
      s.tokens.push_back(std::move(tok));
    }
  }
  OG_CHECK(j.contains("chains"), name, ": \"chains\" is required");
  const json& chains = j["chains"];
  OG_CHECK(chains.is_array() && !chains.empty(), name, ": \"chains\" must be a non-empty array of arrays of strings");
  for (size_t c = 0; c < chains.size(); ++c) {
    const json& chain = chains[c];
    OG_CHECK(chain.is_array() && chain.size() >= 2, name, ": chain ", c + 1,
             " must be an array of at least two token texts (a trigger and its successor)");
    std::vector<std::string> texts;
    for (size_t k = 0; k < chain.size(); ++k) {
      OG_CHECK(chain[k].is_string() && !chain[k].get<std::string>().empty(), name, ": chain ", c + 1, " element ",
               k + 1, " must be a non-empty string, got ", json_excerpt(chain[k]));
      texts.push_back(chain[k].get<std::string>());
    }
    s.chains.push_back(std::move(texts));
  }
  return s;
}

SynthScript read_script(const std::string& path) { return parse_script(read_text_file(path), path); }

const ScriptPlan* script_plan(const SynthSpec& spec) {
  if (spec.script.empty()) return nullptr;
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ScriptPlan>> cache;
  const std::string key = script_key(spec);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, resolve(spec)).first;
  return it->second.get();
}

void apply_script(const SynthSpec& spec, const PlannedTensor& t, std::vector<float>& v, int64_t first_row) {
  const ScriptPlan* plan = script_plan(spec);
  if (!plan) return;
  const std::string& n = t.hf_name;
  if (ends_with(n, "self_attn.o_proj.weight") || ends_with(n, "mlp.down_proj.weight")) {
    std::fill(v.begin(), v.end(), 0.0f);
    return;
  }
  const bool embed = n == "model.embed_tokens.weight", head = n == "lm_head.weight";
  if (!embed && !head) return;
  const int64_t cols = t.shape.at(1), rows = static_cast<int64_t>(v.size()) / cols;
  auto at = [&](int64_t row, int64_t col) -> float& { return v[static_cast<size_t>((row - first_row) * cols + col)]; };
  if (embed) {
    for (const auto& [id, dim] : plan->dim) {
      if (id < first_row || id >= first_row + rows) continue;
      for (int64_t c = 0; c < cols; ++c) at(id, c) = c == dim ? 1.0f : 0.0f;
    }
    return;
  }
  const float weight = static_cast<float>(100.0 / std::sqrt(static_cast<double>(cols)));
  for (const auto& [id, dim] : plan->dim) {
    const int64_t successor = plan->next.at(id);
    for (int64_t r = first_row; r < first_row + rows; ++r) at(r, dim) = r == successor ? weight : 0.0f;
  }
}

}  // namespace og::synth
