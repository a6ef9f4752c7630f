// libFuzzer target: the HF JSON readers. The input is split at NUL bytes into
// config.json, generation_config.json and tokenizer_config.json texts. Each
// is parsed and read through the one set of typed accessors; config.json also
// goes through the reader the loader uses (hf_model_config: family, every
// field, refusals), and a config it accepts through validate_config and the
// KV geometry. Errors must be og::Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/hf_config.h"
#include "model/loader.h"

namespace {

template <class F>
void ignore_errors(F&& f) {
  try {
    f();
  } catch (const og::Error&) {
  }
}

void read_fields(const nlohmann::json& j, const std::string& file) {
  static const char* kKeys[] = {
      "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
      "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta", "vocab_size", "sliding_window",
      "sliding_window_pattern", "tie_word_embeddings", "model_type", "bos_token_id", "eos_token_id",
      "add_bos_token", "add_eos_token", "chat_template", "rope_local_base_freq", "torch_dtype"};
  for (const char* k : kKeys) {
    ignore_errors([&] { og::json_int(j, k, file); });
    ignore_errors([&] { og::json_number(j, k, file); });
    ignore_errors([&] { og::json_bool(j, k, file); });
    ignore_errors([&] { og::json_string(j, k, file); });
  }
  // Nested objects the loaders look into (text_config, rope_scaling).
  for (const char* k : {"text_config", "rope_scaling", "rope_parameters"}) {
    auto it = j.find(k);
    if (it != j.end() && it->is_object()) read_fields(*it, file);
  }
}

// The only tensor the config reader consults: the embedding (prefix, rows).
class EmbeddingOnly final : public og::TensorSource {
 public:
  EmbeddingOnly() {
    og::TensorInfo t;
    t.name = "model.embed_tokens.weight";
    t.type_id = 0;
    t.type_name = "F32";
    t.known_type = true;
    t.shape = {512, 64};
    tensors_.push_back(t);
  }
  const std::vector<og::TensorInfo>& tensors() const override { return tensors_; }
  const og::TensorInfo* find(std::string_view name) const override {
    return name == tensors_[0].name ? &tensors_[0] : nullptr;
  }
  std::string source_name() const override { return "fuzz"; }

 private:
  std::vector<og::TensorInfo> tensors_;
};

void read_model_config(const nlohmann::json& j) {
  static const EmbeddingOnly weights;
  ignore_errors([&] {
    og::ModelConfig c = og::hf_model_config(j, "config.json", weights);
    og::validate_config(c, "config.json");
    (void)og::kv_geometry_from_config(c);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* kNames[] = {"config.json", "generation_config.json", "tokenizer_config.json"};
  std::vector<std::string> docs(1);
  for (size_t k = 0; k < size; ++k) {
    if (data[k] == 0 && docs.size() < 3) docs.emplace_back();
    else docs.back().push_back(static_cast<char>(data[k]));
  }
  for (size_t d = 0; d < docs.size(); ++d) {
    try {
      nlohmann::json j = og::parse_json_object(docs[d], kNames[d]);
      read_fields(j, kNames[d]);
      if (d == 0) read_model_config(j);
    } catch (const og::Error&) {
    }
  }
  return 0;
}
