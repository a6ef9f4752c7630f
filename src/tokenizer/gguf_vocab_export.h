// The tokenizer.* GGUF keys of a Hugging Face checkpoint's tokenizer, as
// llama.cpp reads them: a byte-level BPE tokenizer.json becomes a "gpt2"
// vocabulary (tokens, types, merges, the pre-tokenizer name whose regex chain
// the file's pre-tokenizer is), a SentencePiece model (tokenizer.model, or a
// SentencePiece-style BPE tokenizer.json) a "llama" vocabulary (tokens,
// scores, types, add_space_prefix), a Gemma 4 checkpoint's BPE
// tokenizer.json (config.json model_type gemma4*) a "gemma4" vocabulary
// (tokens, types, merges); each with the special ids and add_bos / add_eos.
// The chat template is not the tokenizer's: export adds its keys
// (format/chat_template_source.h chat_template_gguf_keys).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "format/hf_config.h"

namespace og {

// og::Error naming the file and what cannot be expressed (an unknown
// pre-tokenizer, a non-BPE tokenizer.json, no tokenizer at all).
std::vector<std::pair<std::string, GgufValue>> tokenizer_gguf_keys(const std::string& hf_dir);
// The same from a directory already read (export's one ModelSource).
std::vector<std::pair<std::string, GgufValue>> tokenizer_gguf_keys(const HfCheckpoint& ck);

}  // namespace og
