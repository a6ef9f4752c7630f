// Pre-tokenizer presets for GGUF `tokenizer.ggml.pre` values: the regex chain
// (each regex splits the pieces of the one before, keeping unmatched text as
// pieces) and the flags that go with each family.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace og::tok {

struct BpePreset {
  std::vector<std::string> regexes;
  bool ignore_merges = false;
  bool add_bos = false;  // llama.cpp's default when the file has no add_bos_token
};

// og::Error naming `pre` when it is unknown. An empty name means "default".
BpePreset bpe_preset(std::string_view pre);

// The GGUF pre name whose regex chain is `regexes` (a tokenizer.json's Split /
// ByteLevel patterns, in order), or "" when no preset has exactly that chain.
std::string bpe_pre_name(const std::vector<std::string>& regexes);

// The GPT-2 regex (HF ByteLevel use_regex) and Llama 3's split regex.
extern const char* const kGpt2Regex;
extern const char* const kLlama3Regex;

}  // namespace og::tok
