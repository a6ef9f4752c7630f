// Loaders that build a PipelineTokenizer from each file kind. Tokenizer::from_path
// dispatches here; tests call them directly for one source at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "format/hf_config.h"
#include "tokenizer/pipeline.h"

namespace og::tok {

// HF tokenizer.json (BPE model). `name` names the source in errors.
std::unique_ptr<PipelineTokenizer> load_tokenizer_json_text(const std::string& text, const std::string& name);
std::unique_ptr<PipelineTokenizer> load_tokenizer_json(const std::string& path);
// GPT-2 layout: vocab.json (piece -> id) + merges.txt ("a b" lines, optional
// "#version" header). `pre` names the regex chain (GGUF pre names).
std::unique_ptr<PipelineTokenizer> load_vocab_merges(const std::string& vocab_json, const std::string& merges_txt,
                                                     std::string_view pre = "gpt-2");
// SentencePiece tokenizer.model through libsentencepiece.
std::unique_ptr<PipelineTokenizer> load_sentencepiece(const std::string& model_path);
// The same from the file's bytes (a serialized ModelProto); `name` names it in errors.
std::unique_ptr<PipelineTokenizer> load_sentencepiece_bytes(const std::string& bytes, const std::string& name);
// Applies tokenizer_config.json / generation_config.json / config.json of an
// HF directory (special ids, add_bos/add_eos, extra EOS ids, added tokens).
void apply_hf_configs(PipelineTokenizer& tok, const HfCheckpoint& ck);
void apply_hf_configs(PipelineTokenizer& tok, const std::string& dir);  // HfCheckpoint::open_files(dir)
// The tokenizer of an HF directory already read: tokenizer.json, else
// vocab.json + merges.txt, else tokenizer.model, then its configs applied.
std::unique_ptr<PipelineTokenizer> load_hf_directory(const HfCheckpoint& ck);

}  // namespace og::tok
