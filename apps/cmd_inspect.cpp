// `offgraph inspect MODEL [--json]`: what a .gguf file or HF checkpoint
// directory holds — architecture, tensors by dtype, tokenizer, chat template —
// and the ModelConfig the loader reads from it (hyper-parameters, layers, KV
// geometry). A file that cannot be run is printed as far as it reads, then
// its reason is the error line and the exit code is 1.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/flags.h"
#include "base/mapped_file.h"
#include "chat/chat_template.h"
#include "chat/reply_parser.h"
#include "commands.h"
#include "format/chat_template_source.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/model_source.h"
#include "inspect_vision.h"
#include "kv/kv_types.h"
#include "model/config.h"
#include "model/kv_keys.h"
#include "model/loader.h"
#include "model/model.h"
#include "shared_flags.h"
#include "template/template.h"
#include "tensor/dtype.h"

namespace og::app {

namespace {

using Json = nlohmann::ordered_json;

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
// The model load (add_model) checks it against the architecture.
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

// What `--chat auto` renders with: the model's Jinja template when our engine
// parses it, else the built-in of its format, else raw text.
std::string template_used(const std::optional<std::string>& source) {
  if (!source || source->find_first_not_of(" \t\r\n") == std::string::npos) return "raw text (no template)";
  const std::optional<std::string> format = detect_chat_template(*source);
  try {
    jinja::Template::parse(*source);
    return "the model's own template (Jinja)" + (format ? " in the " + *format + " format" : std::string());
  } catch (const Error& e) {
    if (format) return "the built-in " + *format + " template (the model's does not parse: " + e.what() + ")";
    return std::string("nothing: the model's template does not parse (") + e.what() + "); give --chat NAME";
  }
}

// The template's named variants and the reply formats `serve` parses with it.
void add_template_facts(Json& j, const std::optional<std::string>& source,
                        const std::map<std::string, std::string>& variants) {
  Json names = Json::array();
  for (const auto& [name, text] : variants) names.push_back(name);
  j["chat_template_variants"] = names;
  const ReplyFormat f = detect_reply_format(source.value_or(""));
  j["reply_format"] = {{"tool_calls", tool_call_format_name(f.tools)},
                       {"reasoning", reasoning_format_name(f.reasoning)}};
}

Json inspect_gguf(const ModelSource& src) {
  const GgufFile* g = src.gguf().get();
  const std::string& path = src.path();
  Json j;
  j["path"] = path;
  j["format"] = cat("gguf v", g->version());
  const std::string arch = g->get_string("general.architecture").value_or("");
  j["architecture"] = arch.empty() ? Json(nullptr) : Json(arch);
  if (auto n = g->get_string("general.name")) j["name"] = *n;
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
  j["chat_template_used"] = template_used(g->get_string("tokenizer.chat_template"));
  add_template_facts(j, src.chat_template(), src.chat_template_variants());
  j["kv_stored"] = stored_kv(*g);
  return j;
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

Json inspect_hf(const ModelSource& src) {
  const HfCheckpoint& c = *src.hf();
  const std::string& dir = src.path();
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
  j["tensors"] = tensor_summary(*src.tensors());
  j["tokenizer"] = hf_tokenizer(c);
  j["chat_template"] = src.chat_template().has_value();
  j["chat_template_used"] = template_used(src.chat_template());
  add_template_facts(j, src.chat_template(), src.chat_template_variants());
  return j;
}

// The hyper-parameters as the loader reads them (layer 0 for per-layer
// values; "layers" lists every kind of layer).
Json hparams_of(const ModelConfig& c) {
  Json hp = Json::object();
  hp["d_model"] = c.d_model;
  hp["n_layers"] = c.n_layers();
  if (c.n_layers() > 0) {
    const LayerConfig& L = c.layers[0];
    hp["n_heads"] = L.n_heads;
    hp["n_kv_heads"] = L.n_kv_heads;
    hp["head_dim"] = L.head_dim_k;
    if (L.head_dim_v != L.head_dim_k) hp["head_dim_v"] = L.head_dim_v;
    hp["d_ff"] = L.d_ff;
    if (L.n_experts > 0) {  // a mixture of experts: each token runs n_experts_used of n_experts
      hp["n_experts"] = L.n_experts;
      hp["n_experts_used"] = L.n_experts_used;
      hp["d_ff_expert"] = L.d_ff_expert;
      hp["expert_weights_norm"] = L.expert_weights_norm;
    }
    if (!L.rope_inv_freq_long.empty()) {  // longrope (Phi-3.5): the long factors beyond this context
      hp["rope_scaling"] = "longrope";
      hp["rope_original_ctx"] = L.rope_long_after;
      hp["rope_attn_factor"] = L.rope_attn_factor;
    }
  }
  hp["n_ctx"] = c.n_ctx;
  if (c.n_vocab > 0) hp["n_vocab"] = c.n_vocab;
  int window = 0;
  for (const LayerConfig& L : c.layers) {
    if (L.window == 0 && !hp.contains("rope_base")) hp["rope_base"] = L.rope_base;
    if (L.window > 0 && !hp.contains("rope_base_local")) hp["rope_base_local"] = L.rope_base;
    window = std::max(window, L.window);
  }
  if (!hp.contains("rope_base") && c.n_layers() > 0) hp["rope_base"] = c.layers[0].rope_base;
  hp["rms_eps"] = c.eps;
  hp["window"] = window;
  hp["tied_output"] = c.tied_output;
  if (c.embedding_scale != 1.0f) hp["embedding_scale"] = c.embedding_scale;
  // Embedding models (docs/embeddings.md).
  if (c.pooling != Pooling::kUnset) hp["pooling"] = pooling_name(c.pooling);
  if (!c.causal) hp["causal_attention"] = false;
  if (!c.dense.empty()) {
    Json dense = Json::array();
    for (const DenseProjection& d : c.dense) dense.push_back(std::to_string(d.d_in) + "->" + std::to_string(d.d_out));
    hp["dense"] = dense;
  }
  if (c.pooling != Pooling::kUnset) hp["embedding_dim"] = c.embedding_dim();
  return hp;
}

Json kv_of(const Model& m) {
  KvGeometry g = m.kv_geometry();
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
  j["layers"] = describe_config(m.config());
  j["notes"] = m.config().notes;  // what the reader skipped on purpose (e.g. a vision tower)
  return j;
}

// Fills hparams and kv from the model as `run` would load it (weights left
// mapped). Returns "" when it loads, else why it cannot be run; hparams are
// still filled when the config reads but the tensors do not bind.
std::string add_model(Json& j, const ModelSource& src, const std::string& mmproj) {
  j["hparams"] = Json::object();
  j["kv"] = nullptr;
  j["vision"] = nullptr;
  try {
    LoadOptions opts;
    opts.mmap_only = true;
    std::unique_ptr<Model> m = Model::load(src, opts);
    j["hparams"] = hparams_of(m->config());
    j["hparams"]["n_vocab"] = m->n_vocab();
    j["kv"] = kv_of(*m);
    j["vision"] = model_vision(src, *m, mmproj);  // the tower it runs with; null when text-only
    // Where `run` puts the matrices by default (this load left them all
    // mapped): the dense part copied into huge pages, experts kept mapped.
    const WeightResidency r = m->weight_residency();
    j["weights"] = {{"copied_at_load_bytes", r.mapped_other_bytes}, {"experts_mapped_bytes", r.mapped_expert_bytes}};
    return "";
  } catch (const Error& e) {
    try {
      j["hparams"] = hparams_of(src.hf() ? read_hf_model(*src.hf(), src.tensors()).config
                                         : read_gguf_model(src.gguf()).config);
    } catch (const Error&) {
    }
    return e.what();
  }
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
  if (j["hparams"].empty()) {
    std::printf("hyper-parameters: unavailable (the loader cannot read them)\n");
  } else {
    std::printf("hyper-parameters:\n");
    for (const auto& [k, v] : j["hparams"].items()) std::printf("  %-16s %s\n", k.c_str(), scalar_text(v).c_str());
  }
  if (j.contains("weights")) {
    const Json& w = j["weights"];
    std::printf("weights at run: %s copied into huge pages", human_bytes(w["copied_at_load_bytes"].get<uint64_t>()).c_str());
    if (w["experts_mapped_bytes"].get<uint64_t>() > 0)
      std::printf(", experts %s left mapped (--experts-in-memory copies them)",
                  human_bytes(w["experts_mapped_bytes"].get<uint64_t>()).c_str());
    std::printf("\n");
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
  std::printf("chat template: %s; --chat auto uses %s\n", j["chat_template"].get<bool>() ? "yes" : "no",
              j["chat_template_used"].get<std::string>().c_str());
  if (j.contains("reply_format")) {
    std::string variants;
    for (const auto& v : j["chat_template_variants"]) variants += (variants.empty() ? "" : ", ") + v.get<std::string>();
    std::printf("replies:       tool calls %s, reasoning %s%s\n",
                j["reply_format"]["tool_calls"].get<std::string>().c_str(),
                j["reply_format"]["reasoning"].get<std::string>().c_str(),
                variants.empty() ? "" : ("; template variants: " + variants).c_str());
  }
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
    std::printf("kv:            unavailable: the model cannot be run (%s)\n", kv_why.c_str());
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
  if (!j["vision"].is_null())
    std::printf("vision:        %s (from %s)\n", j["vision"]["summary"].get<std::string>().c_str(),
                j["vision"]["source"].get<std::string>().c_str());
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

// An mmproj GGUF: the file's facts and the tower's; exit 1 when offgraph cannot load it.
int inspect_mmproj_file(const ModelSource& src, bool json) {
  const GgufFile& g = *src.gguf();
  Json j;
  j["path"] = src.path();
  j["format"] = cat("gguf v", g.version());
  j["architecture"] = g.get_string("general.architecture").value_or("");
  if (auto n = g.get_string("general.name")) j["name"] = *n;
  j["tensors"] = tensor_summary(g);
  std::string why;
  j["vision"] = inspect_mmproj(g, &why);
  j["runnable"] = why.empty();  // as a tower: beside a text model (--mmproj)
  if (!why.empty()) j["error"] = why;
  if (json) {
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("model:         %s (%s)\n", src.path().c_str(), j["format"].get<std::string>().c_str());
    std::printf("architecture:  %s", j["architecture"].get<std::string>().c_str());
    if (j.contains("name")) std::printf("  (name: %s)", j["name"].get<std::string>().c_str());
    std::printf("\n");
    const Json& t = j["tensors"];
    std::printf("tensors:       %s, %s\n", scalar_text(t["count"]).c_str(),
                human_bytes(t["bytes"].get<uint64_t>()).c_str());
    print_mmproj(j["vision"]);
  }
  if (!why.empty()) fail(why);
  return 0;
}

}  // namespace

int cmd_inspect(const Args& args) {
  std::string model_flag;
  bool json = false;
  Flags f = command_flags("inspect",
          "MODEL [--json]   (or --model MODEL)\n\n"
          "Prints what a .gguf file or a Hugging Face checkpoint directory holds and the\n"
          "configuration the loader reads from it. Exit code 0 when the model can be run;\n"
          "1 when the file cannot be read, or can be read but not run (an unknown\n"
          "architecture, a missing tensor, a vocabulary-only file): what it holds is\n"
          "printed first, then the reason as the error line; 2 for bad usage.\n"
          "An mmproj GGUF (llama.cpp's vision tower file) is described as a tower:\n"
          "projector type, sizes, tokens per image, mean/std; exit code 0 when offgraph\n"
          "loads it with --mmproj.");
  add_model_flag(f, &model_flag, "the model, instead of the MODEL argument");
  f.add_bool("json", &json, "print one JSON object instead of text (\"error\" holds the reason it cannot run)");
  std::string mmproj;
  add_mmproj_flag(f, &mmproj);
  std::vector<std::string> positional;
  if (!f.parse(args, &positional)) {
    std::fputs(f.help().c_str(), stdout);
    return 0;
  }
  if (!model_flag.empty()) positional.insert(positional.begin(), model_flag);
  if (positional.empty()) usage_fail("missing MODEL (a .gguf file or a Hugging Face directory)");
  if (positional.size() > 1) usage_fail("more than one MODEL given ('" + positional[0] + "', '" + positional[1] + "')");
  const std::string& model = positional[0];
  check_path_exists(model, "--model");
  // Opened once: what it holds and the model loaded from it read the same source.
  const std::shared_ptr<const ModelSource> src = ModelSource::open(model);
  if (src->gguf() && is_mmproj(*src->gguf())) {
    if (!mmproj.empty()) usage_fail("--mmproj goes with a text model; " + model + " is itself an mmproj file");
    return inspect_mmproj_file(*src, json);
  }
  Json j = src->hf() ? inspect_hf(*src) : inspect_gguf(*src);
  const std::string why = add_model(j, *src, mmproj);
  j["runnable"] = why.empty();
  if (!why.empty()) j["error"] = why;
  if (json) {
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    print_text(j, why);
  }
  if (!why.empty()) fail(why);
  return 0;
}

}  // namespace og::app
