// Model::load (GGUF file or HF checkpoint directory -> family -> config ->
// bound weights) and the Model implementation over a kept-alive source.
#include "base/error.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/model_source.h"
#include "model/families/common.h"
#include "model/families/family.h"
#include "model/embedding.h"
#include "model/hf_expert_stacks.h"
#include "model/kv_keys.h"
#include "model/loader.h"

namespace og {

void Batch::want_last_logits_per_sequence() {
  for (size_t i = 0; i < rows.size(); ++i) {
    bool last = true;
    for (size_t j = i + 1; j < rows.size(); ++j)
      if (rows[j].seq == rows[i].seq) {
        last = false;
        break;
      }
    if (last) rows[i].want_logits = true;
  }
}

void Batch::mark_bidirectional(int seq, int64_t begin, int64_t end) {
  OG_CHECK(begin >= 0 && begin < end, "batch: bidirectional span [", begin, ", ", end, ") of sequence ", seq,
           " is empty or negative");
  int64_t found = 0;
  for (const BatchRow& r : rows) found += r.seq == seq && r.pos >= begin && r.pos < end ? 1 : 0;
  OG_CHECK(found == end - begin, "batch: bidirectional span [", begin, ", ", end, ") of sequence ", seq,
           " has ", found, " of its ", end - begin, " positions in the batch (a span must be in one step)");
  for (BatchRow& r : rows)
    if (r.seq == seq && r.pos >= begin && r.pos < end) r.span_end = end;
}

namespace {

class LoadedModel : public Model {
 public:
  LoadedModel(ModelConfig c, std::shared_ptr<const TensorSource> src, const GgufFile* gguf, const LoadOptions& opts,
              bool source_is_mapped)
      : config_(std::move(c)), source_(std::move(src)), gguf_(gguf) {
    validate_config(config_, source_->source_name());
    weights_ = bind_weights(config_, *source_);
    if (!opts.mmap_only)
      weight_copy_ = place_weights_in_huge_pages(weights_, source_is_mapped, opts.experts_in_memory);
    geometry_ = kv_geometry_from_config(config_);
    // A file that publishes its cache geometry (offgraph.kv.*) must agree with its architecture.
    if (gguf_)
      if (std::optional<KvGeometry> stored = read_kv_geometry_keys(*gguf_))
        check_kv_geometry(*stored, geometry_, source_->source_name());
  }
  const ModelConfig& config() const override { return config_; }
  KvGeometry kv_geometry() const override { return geometry_; }
  int32_t n_vocab() const override { return config_.n_vocab; }
  std::string architecture() const override { return config_.architecture; }
  std::string source_path() const override { return source_->source_name(); }
  WeightTraffic weight_traffic() const override {
    WeightTraffic t;
    auto add = [&t](const TensorView& m) {
      if (!m.data) return;
      t.matmul_bytes += m.shape[0] * m.row_bytes();
      t.matmul_macs_per_row += m.shape[0] * m.shape[1];
    };
    for (size_t i = 0; i < weights_.layers.size(); ++i) {
      const LayerWeights& l = weights_.layers[i];
      for (const TensorView* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.w_router}) add(*m);
      // A row reads only its n_experts_used experts (counted at expert 0's size; all are alike).
      for (int j = 0; j < config_.layers[i].n_experts_used && !l.w_gate_exps.empty(); ++j)
        for (const TensorView* m : {&l.w_gate_exps[0], &l.w_up_exps[0], &l.w_down_exps[0]}) {
          add(*m);
          t.expert_bytes_per_row += m->data ? m->shape[0] * m->row_bytes() : 0;
        }
    }
    add(weights_.output);
    return t;
  }
  WeightResidency weight_residency() const override {
    WeightResidency r;
    const uint8_t* b = weight_copy_.data();
    auto add = [&](const TensorView& m, bool expert) {
      if (!m.data) return;
      auto* p = static_cast<const uint8_t*>(m.data);
      const int64_t n = m.nbytes();
      if (b && p >= b && p < b + weight_copy_.size())
        r.copied_bytes += n;
      else
        (expert ? r.mapped_expert_bytes : r.mapped_other_bytes) += n;
    };
    for (const LayerWeights& l : weights_.layers) {
      for (const TensorView* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.w_pl_gate,
                                  &l.w_pl_proj, &l.w_router})
        add(*m, false);
      for (auto* set : {&l.w_gate_exps, &l.w_up_exps, &l.w_down_exps})
        for (const TensorView& m : *set) add(m, true);
    }
    add(weights_.output, false);  // a looked-up untied embedding is neither copied nor counted
    add(weights_.per_layer_model_proj, false);
    return r;
  }
  KvResult forward(const Batch& batch, KvCache& cache, std::vector<float>& logits) const override {
    return forward_pass(config_, weights_, geometry_, batch, cache, logits);
  }
  void embed(const Batch& batch, Embeddings& out) const override {
    OG_CHECK(config_.pooling != Pooling::kUnset, source_->source_name(),
             ": not an embedding model (the file declares no pooling type)");
    thread_local std::vector<float> hidden;
    hidden_pass(config_, weights_, geometry_, batch, hidden);
    pool_rows(config_.pooling, batch.rows, hidden.data(), config_.d_model, out);
    apply_dense(weights_.dense, out);
  }

 private:
  ModelConfig config_;
  std::shared_ptr<const TensorSource> source_;
  const GgufFile* gguf_;
  Weights weights_;
  HugePageBuffer weight_copy_;  // the matrices unless mmap_only (weights_ points here; experts only if asked)
  KvGeometry geometry_;
};

}  // namespace

GgufModelSource read_gguf_model(const std::string& path) { return read_gguf_model(GgufFile::open(path)); }

GgufModelSource read_gguf_model(std::shared_ptr<GgufFile> f) {
  const std::string path = f->source_name();
  const std::optional<std::string> arch = f->get_string("general.architecture");
  OG_CHECK(arch.has_value(), path, ": missing required key general.architecture");
  // Vocabulary-only files (tokenizer tests, ggml-vocab-*.gguf) hold no tensors.
  OG_CHECK(!f->tensors().empty(), path, ": holds no tensors (a vocabulary-only file?), so it cannot be run");
  const FamilySpec* family = family_for_gguf_arch(*arch);
  OG_CHECK(family != nullptr, path, ": general.architecture '", *arch, "' is not supported (supported: ",
           supported_gguf_archs(), ")");
  ModelConfig c;
  c.architecture = family->name;
  c.layout = WeightLayout::kGguf;
  family->from_gguf(*f, *arch, c);
  c.prefill_chunk_size = read_prefill_chunk_size(*f).value_or(0);
  return {std::move(c), std::move(f)};
}

namespace {

// The decoder tensors' prefix: text-only checkpoints use "model.", multimodal
// ones one of two nestings depending on the transformers version.
std::string hf_prefix(const TensorSource& w) {
  // "": base models without a head (Qwen3Model, Gemma3TextModel: embedding checkpoints).
  for (const char* p : {"model.", "model.language_model.", "language_model.model.", ""})
    if (w.find(std::string(p) + "embed_tokens.weight") != nullptr) return p;
  // Encoders: BertModel / NomicBertModel ("bert." under a task head).
  for (const char* p : {"", "bert."})
    if (w.find(std::string(p) + "embeddings.word_embeddings.weight") != nullptr) return p;
  fail(w.source_name(), ": missing tensor model.embed_tokens.weight (or embeddings.word_embeddings.weight)");
}

}  // namespace

ModelConfig hf_model_config(const nlohmann::json& cfg, const std::string& file, const TensorSource& weights) {
  OG_CHECK(cfg.contains("architectures") && cfg["architectures"].is_array() && !cfg["architectures"].empty() &&
               cfg["architectures"][0].is_string(),
           file, ": architectures must be a non-empty list of names");
  const std::string arch = cfg["architectures"][0].get<std::string>();
  const FamilySpec* family = family_for_hf_arch(arch);
  OG_CHECK(family != nullptr, file, ": architecture '", arch, "' is not supported (supported: ",
           supported_hf_archs(), ")");
  // Multimodal checkpoints keep the text model's fields under text_config.
  const bool nested = cfg.contains("text_config") && cfg["text_config"].is_object();
  ModelConfig c;
  c.architecture = family->name;
  c.layout = WeightLayout::kHf;
  c.hf_prefix = hf_prefix(weights);
  family->from_hf(HfInput{nested ? cfg["text_config"] : cfg, file, weights}, c);
  return c;
}

namespace {

// The checkpoint's weights plus the sentence-transformers Dense modules'
// ("<path>/model.safetensors", tensor "linear.weight" named "<path>/linear.weight").
class WithDenseModules : public TensorSource {
 public:
  WithDenseModules(std::shared_ptr<const TensorSource> main, const std::string& dir,
                   const std::vector<DenseProjection>& dense)
      : main_(std::move(main)), infos_(main_->tensors()) {
    for (const DenseProjection& d : dense) {
      std::unique_ptr<SafetensorsSource> s = SafetensorsSource::open_file(dir + "/" + d.hf_path + "/model.safetensors");
      for (const TensorInfo& t : s->tensors()) {
        OG_CHECK(t.name == "linear.weight", s->source_name(), ": tensor ", t.name,
                 " is not supported (a Dense module holds linear.weight only)");
        TensorInfo named = t;
        named.name = d.hf_path + "/" + t.name;
        infos_.push_back(std::move(named));
      }
      extra_.push_back(std::move(s));
    }
  }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  const TensorInfo* find(std::string_view name) const override {
    for (size_t i = main_->tensors().size(); i < infos_.size(); ++i)
      if (infos_[i].name == name) return &infos_[i];
    return main_->find(name);
  }
  std::string source_name() const override { return main_->source_name(); }

 private:
  std::shared_ptr<const TensorSource> main_;
  std::vector<std::unique_ptr<SafetensorsSource>> extra_;
  std::vector<TensorInfo> infos_;
};

}  // namespace

HfModelSource read_hf_model(const std::string& dir) {
  HfCheckpoint ck = HfCheckpoint::open(dir);
  return read_hf_model(ck, std::shared_ptr<const TensorSource>(std::move(ck.weights)));
}

HfModelSource read_hf_model(const HfCheckpoint& ck, std::shared_ptr<const TensorSource> weights) {
  const std::string& dir = ck.dir;
  OG_CHECK(weights != nullptr, dir, ": no weights");
  ModelConfig c = hf_model_config(ck.config, ck.config_path, *weights);
  const bool nested = ck.config.contains("text_config") && ck.config["text_config"].is_object();
  read_hf_embedding(dir, nested ? ck.config["text_config"] : ck.config, ck.config_path, c);
  if (!c.has_output_norm && c.pooling == Pooling::kUnset) {  // an encoder without sentence-transformers pooling
    c.pooling = Pooling::kNone;
    c.notes.push_back("no modules.json Pooling module: one vector per token (pooling none), as llama.cpp runs "
                      "its GGUF");
  }
  if (!c.dense.empty()) weights = std::make_shared<WithDenseModules>(std::move(weights), dir, c.dense);
  if (c.hf_moe.gpt_oss_stacks) weights = with_gpt_oss_expert_stacks(std::move(weights), c);
  return {std::move(c), std::move(weights)};
}

std::unique_ptr<Model> make_model(ModelConfig config, std::shared_ptr<const TensorSource> source,
                                  const GgufFile* gguf, const LoadOptions& opts, bool source_is_mapped) {
  OG_CHECK(source != nullptr, "make_model: no tensor source");
  return std::make_unique<LoadedModel>(std::move(config), std::move(source), gguf, opts, source_is_mapped);
}

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  return load(*ModelSource::open(path), opts);
}

std::unique_ptr<Model> Model::load(const ModelSource& src, const LoadOptions& opts) {
  if (const HfCheckpoint* ck = src.hf()) {
    HfModelSource m = read_hf_model(*ck, src.tensors());
    return make_model(std::move(m.config), std::move(m.weights), nullptr, opts, true);
  }
  GgufModelSource m = read_gguf_model(src.gguf());
  const GgufFile* g = m.file.get();
  return make_model(std::move(m.config), std::move(m.file), g, opts, true);
}

}  // namespace og
