// A model source: a GGUF file or an HF checkpoint directory, opened once per
// run. The path is checked once, a GGUF file mapped once, an HF directory's
// small files (config.json, generation_config.json, tokenizer_config.json,
// chat_template.jinja / .json) read once and its weights opened once; the
// model loader, the tokenizer loader, the chat code and the server's facts
// then take their parts from here instead of reopening the path.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/tensor_source.h"

namespace og {

class ModelSource {
 public:
  // path: a .gguf file or an HF checkpoint directory (config.json required).
  // weights = false opens an HF directory without its safetensors and
  // without requiring config.json (template and tokenizer readers need
  // neither). og::Error naming the path and the problem, as Model::load.
  static std::shared_ptr<const ModelSource> open(const std::string& path, bool weights = true);

  const std::string& path() const { return path_; }
  // The GGUF file (metadata, vocabulary, tensors) when the source is one, else null.
  const std::shared_ptr<GgufFile>& gguf() const { return gguf_; }
  // The HF directory's files when the source is one, else null. Its `weights`
  // member is always null: the weights are tensors() below.
  const HfCheckpoint* hf() const { return hf_ ? &*hf_ : nullptr; }
  // The tensors: the GGUF file itself, or the directory's safetensors (null
  // when opened with weights = false).
  std::shared_ptr<const TensorSource> tensors() const { return tensors_; }
  // The Jinja chat template stored with the model and its named variants
  // (format/chat_template_source.h says where each kind keeps them).
  const std::optional<std::string>& chat_template() const { return template_; }
  const std::map<std::string, std::string>& chat_template_variants() const { return variants_; }

 private:
  std::string path_;
  std::shared_ptr<GgufFile> gguf_;
  std::optional<HfCheckpoint> hf_;
  std::shared_ptr<const TensorSource> tensors_;
  std::optional<std::string> template_;
  std::map<std::string, std::string> variants_;
};

}  // namespace og
