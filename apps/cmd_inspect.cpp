// `offgraph inspect MODEL [--json]`: what a .gguf file or HF checkpoint
// directory holds — architecture, hyper-parameters, tensors by dtype,
// tokenizer, chat template — and the KV geometry the model needs.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "commands.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "kv/kv_types.h"
#include "model/config.h"
#include "model/kv_keys.h"
#include "model/model.h"
#include "tensor/dtype.h"

namespace og::app {

namespace {

using Json = nlohmann::ordered_json;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: offgraph inspect MODEL [--json]\n"
               "  MODEL    a .gguf file or a Hugging Face checkpoint directory (config.json + *.safetensors)\n"
               "  --json   print one JSON object instead of text\n");
}

void put_if(Json& j, const char* key, const std::optional<int64_t>& v) {
  if (v) j[key] = *v;
}
void put_if(Json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}

Json tensor_summary(const TensorSource& src) {
  std::map<std::string, std::pair<int64_t, uint64_t>> by;  // dtype -> (count, bytes)
  uint64_t total = 0;
  for (const TensorInfo& t : src.tensors()) {
    // The engine's dtype names ("f32", "q4_k") for both layouts; the file's own for others.
    auto& e = by[t.known_type ? dtype_name(t.type_id) : t.type_name];
    e.first += 1;
    e.second += t.nbytes;
    total += t.nbytes;
  }
  Json j;
  j["count"] = src.tensors().size();
  j["bytes"] = total;
  Json d = Json::object();
  for (const auto& [name, e] : by) d[name] = {{"count", e.first}, {"bytes", e.second}};
  j["by_dtype"] = d;
  return j;
}

// The cache geometry the file publishes (offgraph.kv.*), null when it has none.
// The model load (kv_section) checks it against the architecture.
Json stored_kv(const GgufFile& g) {
  std::optional<KvGeometry> geo;
  try {
    geo = read_kv_geometry_keys(g);
  } catch (const Error& e) {
    return Json{{"error", e.what()}};
  }
  if (!geo) return nullptr;
  Json caches = Json::array();
  for (const KvCacheSpec& s : geo->caches)
    caches.push_back({{"kv_heads", s.n_kv_heads}, {"head_dim_k", s.head_dim_k}, {"head_dim_v", s.head_dim_v},
                      {"window", s.window}});
  Json j;
  j["caches"] = caches;
  j["layer_cache"] = geo->layer_cache;
  if (auto n = g.get_int(kKvPrefillChunkSize)) j["prefill_chunk_size"] = *n;
  return j;
}

Json inspect_gguf(const std::string& path) {
  std::unique_ptr<GgufFile> g = GgufFile::open(path);
  Json j;
  j["path"] = path;
  j["format"] = cat("gguf v", g->version());
  const std::string arch = g->get_string("general.architecture").value_or("");
  j["architecture"] = arch.empty() ? Json(nullptr) : Json(arch);
  if (auto n = g->get_string("general.name")) j["name"] = *n;
  Json hp = Json::object();
  if (!arch.empty()) {
    const std::string p = arch + ".";
    auto i = [&](const std::string& k) -> std::optional<int64_t> {
      const GgufValue* v = g->get(p + k);
      if (v && v->type == GgufType::ARRAY) return std::nullopt;  // per-layer arrays: see "layers"
      return g->get_int(p + k);
    };
    put_if(hp, "d_model", i("embedding_length"));
    put_if(hp, "n_layers", i("block_count"));
    put_if(hp, "n_heads", i("attention.head_count"));
    put_if(hp, "n_kv_heads", i("attention.head_count_kv"));
    put_if(hp, "head_dim", i("attention.key_length"));
    if (!hp.contains("head_dim") && hp.contains("d_model") && hp.contains("n_heads") && hp["n_heads"] != 0)
      hp["head_dim"] = hp["d_model"].get<int64_t>() / hp["n_heads"].get<int64_t>();
    put_if(hp, "d_ff", i("feed_forward_length"));
    put_if(hp, "n_ctx", i("context_length"));
    put_if(hp, "n_rot", i("rope.dimension_count"));
    put_if(hp, "rope_base", g->get_float(p + "rope.freq_base"));
    put_if(hp, "rope_base_local", g->get_float(p + "rope.freq_base_swa"));
    put_if(hp, "rms_eps", g->get_float(p + "attention.layer_norm_rms_epsilon"));
    put_if(hp, "window", i("attention.sliding_window"));
    put_if(hp, "sliding_pattern", i("attention.sliding_window_pattern"));
  }
  if (auto tokens = g->get("tokenizer.ggml.tokens"); tokens && tokens->type == GgufType::ARRAY)
    hp["n_vocab"] = tokens->arr.size();
  else if (const TensorInfo* e = g->find("token_embd.weight"))
    hp["n_vocab"] = e->shape.front();
  if (!arch.empty() && g->find("token_embd.weight")) hp["tied_output"] = g->find("output.weight") == nullptr;
  j["hparams"] = hp;
  j["tensors"] = tensor_summary(*g);
  Json tok;
  if (auto m = g->get_string("tokenizer.ggml.model")) {
    tok["kind"] = *m == "llama" ? "sentencepiece" : *m == "gpt2" ? "byte-level BPE" : *m;
    tok["model"] = *m;
    if (auto pre = g->get_string("tokenizer.ggml.pre")) tok["pre"] = *pre;
    if (auto t = g->get("tokenizer.ggml.tokens"); t && t->type == GgufType::ARRAY) tok["size"] = t->arr.size();
    if (auto t = g->get("tokenizer.ggml.merges"); t && t->type == GgufType::ARRAY) tok["merges"] = t->arr.size();
  } else {
    tok = nullptr;
  }
  j["tokenizer"] = tok;
  j["chat_template"] = g->get("tokenizer.chat_template") != nullptr;
  j["kv_stored"] = stored_kv(*g);
  return j;
}

const nlohmann::json& text_config(const nlohmann::json& c) {
  auto it = c.find("text_config");
  return it != c.end() && it->is_object() ? *it : c;
}

Json hf_tokenizer(const HfCheckpoint& c) {
  Json tok;
  if (!c.tokenizer_json_path.empty()) {
    nlohmann::json t = read_json_file(c.tokenizer_json_path);
    const std::string file = c.tokenizer_json_path;
    auto model = t.find("model");
    OG_CHECK(model != t.end() && model->is_object(), file, ": model must be an object");
    std::string type = json_string(*model, "type", file).value_or("BPE");
    tok["kind"] = type == "BPE" ? "BPE (tokenizer.json)" : type + " (tokenizer.json)";
    tok["model"] = type;
    int64_t size = 0;
    auto vocab = model->find("vocab");
    if (vocab != model->end() && (vocab->is_object() || vocab->is_array())) {
      size = static_cast<int64_t>(vocab->size());
      if (vocab->is_object()) {
        auto added = t.find("added_tokens");
        if (added != t.end() && added->is_array())
          for (const auto& a : *added)
            if (a.is_object() && a.contains("content") && a["content"].is_string() &&
                !vocab->contains(a["content"].get<std::string>()))
              ++size;
      }
    }
    tok["size"] = size;
    auto merges = model->find("merges");
    if (merges != model->end() && merges->is_array()) tok["merges"] = merges->size();
  } else if (!c.tokenizer_model_path.empty()) {
    tok["kind"] = "sentencepiece (tokenizer.model)";
    tok["model"] = "sentencepiece";
  } else {
    return nullptr;
  }
  return tok;
}

Json inspect_hf(const std::string& dir) {
  HfCheckpoint c = HfCheckpoint::open(dir);
  const std::string cf = dir + "/config.json";
  Json j;
  j["path"] = dir;
  j["format"] = "hf safetensors";
  auto archs = c.config.find("architectures");
  if (archs != c.config.end() && archs->is_array() && !archs->empty() && (*archs)[0].is_string())
    j["architecture"] = (*archs)[0].get<std::string>();
  else
    j["architecture"] = nullptr;
  if (auto mt = json_string(c.config, "model_type", cf)) j["model_type"] = *mt;
  const nlohmann::json& t = text_config(c.config);
  Json hp = Json::object();
  put_if(hp, "d_model", json_int(t, "hidden_size", cf));
  put_if(hp, "n_layers", json_int(t, "num_hidden_layers", cf));
  put_if(hp, "n_heads", json_int(t, "num_attention_heads", cf));
  put_if(hp, "n_kv_heads", json_int(t, "num_key_value_heads", cf));
  put_if(hp, "head_dim", json_int(t, "head_dim", cf));
  if (!hp.contains("head_dim") && hp.contains("d_model") && hp.contains("n_heads") && hp["n_heads"] != 0)
    hp["head_dim"] = hp["d_model"].get<int64_t>() / hp["n_heads"].get<int64_t>();
  put_if(hp, "d_ff", json_int(t, "intermediate_size", cf));
  put_if(hp, "n_ctx", json_int(t, "max_position_embeddings", cf));
  put_if(hp, "n_vocab", json_int(t, "vocab_size", cf));
  put_if(hp, "rope_base", json_number(t, "rope_theta", cf));
  put_if(hp, "rope_base_local", json_number(t, "rope_local_base_freq", cf));
  put_if(hp, "rms_eps", json_number(t, "rms_norm_eps", cf));
  put_if(hp, "window", json_int(t, "sliding_window", cf));
  put_if(hp, "sliding_pattern", json_int(t, "sliding_window_pattern", cf));
  if (auto tied = json_bool(t, "tie_word_embeddings", cf)) hp["tied_output"] = *tied;
  j["hparams"] = hp;
  j["tensors"] = tensor_summary(*c.weights);
  j["tokenizer"] = hf_tokenizer(c);
  bool chat = !c.chat_template_path.empty();
  if (c.tokenizer_config && c.tokenizer_config->contains("chat_template") &&
      !(*c.tokenizer_config)["chat_template"].is_null())
    chat = true;
  j["chat_template"] = chat;
  return j;
}

// The KV geometry from the model's family code; null plus a reason when the
// file is not a loadable model (vocab-only GGUF, unsupported architecture).
Json kv_section(const std::string& path, std::string* why) {
  std::unique_ptr<Model> m;
  try {
    LoadOptions opts;
    opts.mmap_only = true;
    m = Model::load(path, opts);
  } catch (const Error& e) {
    *why = e.what();
    return nullptr;
  }
  KvGeometry g = m->kv_geometry();
  Json caches = Json::array();
  int64_t per_token = 0;  // elements of K and V per position, over all caches
  for (size_t c = 0; c < g.caches.size(); ++c) {
    const KvCacheSpec& s = g.caches[c];
    Json layers = Json::array();
    for (size_t l = 0; l < g.layer_cache.size(); ++l)
      if (g.layer_cache[l] == static_cast<int>(c)) layers.push_back(l);
    caches.push_back({{"kv_heads", s.n_kv_heads},
                      {"head_dim_k", s.head_dim_k},
                      {"head_dim_v", s.head_dim_v},
                      {"window", s.window},
                      {"layers", layers}});
    per_token += static_cast<int64_t>(s.n_kv_heads) * (s.head_dim_k + s.head_dim_v);
  }
  Json j;
  j["caches"] = caches;
  j["bytes_per_position_f16"] = per_token * 2;
  j["layers"] = describe_config(m->config());
  j["notes"] = m->config().notes;  // what the reader skipped on purpose (e.g. a vision tower)
  return j;
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string scalar_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {  // GGUF floats are f32: 7 significant digits say all there is
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", v.get<double>());
    return buf;
  }
  return v.dump();
}

void print_text(const Json& j, const std::string& kv_why) {
  std::printf("model:         %s (%s)\n", j["path"].get<std::string>().c_str(),
              j["format"].get<std::string>().c_str());
  std::printf("architecture:  %s", j["architecture"].is_null() ? "(none)" : scalar_text(j["architecture"]).c_str());
  if (j.contains("name")) std::printf("  (name: %s)", j["name"].get<std::string>().c_str());
  if (j.contains("model_type")) std::printf("  (model_type: %s)", j["model_type"].get<std::string>().c_str());
  std::printf("\n");
  if (!j["hparams"].empty()) {
    std::printf("hyper-parameters:\n");
    for (const auto& [k, v] : j["hparams"].items()) std::printf("  %-16s %s\n", k.c_str(), scalar_text(v).c_str());
  }
  const Json& t = j["tensors"];
  std::printf("tensors:       %s, %s\n", scalar_text(t["count"]).c_str(), human_bytes(t["bytes"].get<uint64_t>()).c_str());
  for (const auto& [k, v] : t["by_dtype"].items())
    std::printf("  %-8s %6s tensors  %s\n", k.c_str(), scalar_text(v["count"]).c_str(),
                human_bytes(v["bytes"].get<uint64_t>()).c_str());
  const Json& tok = j["tokenizer"];
  if (tok.is_null()) {
    std::printf("tokenizer:     none\n");
  } else {
    std::printf("tokenizer:     %s", tok["kind"].get<std::string>().c_str());
    if (tok.contains("size")) std::printf(", %s tokens", scalar_text(tok["size"]).c_str());
    if (tok.contains("merges")) std::printf(", %s merges", scalar_text(tok["merges"]).c_str());
    if (tok.contains("pre")) std::printf(", pre %s", tok["pre"].get<std::string>().c_str());
    std::printf("\n");
  }
  std::printf("chat template: %s\n", j["chat_template"].get<bool>() ? "yes" : "no");
  if (j.contains("kv_stored") && !j["kv_stored"].is_null()) {
    const Json& s = j["kv_stored"];
    if (s.contains("error")) {
      std::printf("kv (file):     unreadable (%s)\n", s["error"].get<std::string>().c_str());
    } else {
      std::printf("kv (file):     %zu cache%s", s["caches"].size(), s["caches"].size() == 1 ? "" : "s");
      if (s.contains("prefill_chunk_size")) std::printf(", prefill chunk %s", s["prefill_chunk_size"].dump().c_str());
      std::printf(" (offgraph.kv.*; %s)\n", j["kv"].is_null() ? "not checked" : "agrees with the architecture");
    }
  }
  const Json& kv = j["kv"];
  if (kv.is_null()) {
    std::printf("kv:            unavailable (%s)\n", kv_why.c_str());
    return;
  }
  std::printf("kv:            %zu cache%s, %s per position at f16\n", kv["caches"].size(),
              kv["caches"].size() == 1 ? "" : "s", human_bytes(kv["bytes_per_position_f16"].get<uint64_t>()).c_str());
  for (size_t c = 0; c < kv["caches"].size(); ++c) {
    const Json& s = kv["caches"][c];
    std::string layers;
    for (const auto& l : s["layers"]) {
      if (!layers.empty()) layers += ',';
      layers += l.dump();
    }
    std::printf("  cache %-3zu kv_heads %s  head_dim %s/%s  %s  layers %s\n", c, s["kv_heads"].dump().c_str(),
                s["head_dim_k"].dump().c_str(), s["head_dim_v"].dump().c_str(),
                s["window"].get<int>() > 0 ? cat("window ", s["window"].get<int>()).c_str() : "full",
                layers.c_str());
  }
  for (const auto& n : kv["notes"]) std::printf("note:          %s\n", n.get<std::string>().c_str());
  std::printf("layers:\n");
  std::string d = kv["layers"].get<std::string>();
  size_t start = 0;
  while (start < d.size()) {
    size_t nl = d.find('\n', start);
    if (nl == std::string::npos) nl = d.size();
    if (nl > start) std::printf("  %s\n", d.substr(start, nl - start).c_str());
    start = nl + 1;
  }
}

}  // namespace

int cmd_inspect(const Args& args) {
  std::string model;
  bool json = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a == "--json") {
      json = true;
    } else if (a.rfind("-", 0) == 0 && a.size() > 1) {
      std::fprintf(stderr, "offgraph inspect: unknown option '%s' (see offgraph inspect --help)\n", a.c_str());
      return 2;
    } else if (model.empty()) {
      model = a;
    } else {
      std::fprintf(stderr, "offgraph inspect: more than one MODEL given ('%s', '%s')\n", model.c_str(), a.c_str());
      return 2;
    }
  }
  if (model.empty()) {
    std::fprintf(stderr, "offgraph inspect: missing MODEL (a .gguf file or an HF directory; see --help)\n");
    return 2;
  }
  if (!file_exists(model)) fail(model, ": no such file or directory");
  Json j = is_directory(model) ? inspect_hf(model) : inspect_gguf(model);
  std::string why;
  j["kv"] = kv_section(model, &why);
  if (j["kv"].is_null()) j["kv_unavailable"] = why;
  if (json) {
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    print_text(j, why);
  }
  return 0;
}

}  // namespace og::app
