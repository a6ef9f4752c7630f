// Regex chains of the GGUF byte-level BPE pre-tokenizer families. The
// patterns are the public pre-tokenizer definitions of each model's
// tokenizer.json (as GGUF converters name them).
#include "tokenizer/bpe_presets.h"

#include "base/error.h"

namespace og::tok {

const char* const kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt4oRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekkenRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's pattern without the final \s+ alternative (whitespace left over
// stays a piece of its own either way).
const char* const kGpt2Short = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kBloomRegex = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)";

bool one_of(std::string_view v, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (v == n) return true;
  return false;
}

}  // namespace

std::string bpe_pre_name(const std::vector<std::string>& regexes) {
  // HF's ByteLevel(use_regex) is GPT-2's pattern with a trailing \s+ alternative, which splits alike.
  if (regexes == std::vector<std::string>{kGpt2Regex}) return "gpt-2";
  // One name per distinct chain, the name llama.cpp's converter writes for it.
  for (const char* name : {"llama-bpe", "qwen2", "gpt-2", "tekken", "gpt-4o", "starcoder", "deepseek-llm",
                           "deepseek-coder", "falcon", "bloom", "viking"}) {
    const BpePreset p = bpe_preset(name);
    if (p.regexes == regexes) return name;
  }
  return "";
}

BpePreset bpe_preset(std::string_view pre) {
  if (pre.empty() || pre == "default")
    return {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Short, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false, false};
  if (one_of(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral"}))
    return {{kLlama3Regex}, true, true};
  if (one_of(pre, {"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"})) return {{kLlama3Regex}, false, false};
  if (pre == "deepseek-llm")
    return {{
                "[\r\n]",
                R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}-\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}-\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}-\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
                R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
                R"(\s+\z)",
                R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)",
                R"(\p{N}+)",
            },
            false,
            false};
  if (pre == "deepseek-coder")
    return {{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)", R"(\p{N})"}, false, false};
  if (pre == "falcon")
    return {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2Short, "[0-9][0-9][0-9]"}, false, false};
  if (one_of(pre, {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}))
    return {{R"(\p{N})", kGpt2Short}, false, false};
  if (one_of(pre, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "mpt", "olmo",
                   "jais", "roberta-bpe", "jina-v1-en", "jina-v2-code", "exaone4"}))
    return {{kGpt2Short}, false, false};
  if (one_of(pre, {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"})) return {{kQwen2Regex}, false, false};
  if (one_of(pre, {"poro-chat", "bloom", "gpt3-finnish"})) return {{kBloomRegex}, false, false};
  if (pre == "viking") return {{kBloomRegex, R"(\p{N})"}, false, false};
  if (pre == "tekken") return {{kTekkenRegex}, true, true};
  if (one_of(pre, {"gpt-4o", "llama4"})) return {{kGpt4oRegex}, false, false};
  if (pre == "chameleon")
    return {{"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", R"(([\t\n]|    |  ))", R"(\p{N})",
             R"([\p{P}!-/:-@\[-`{-~])", kGpt2Short},
            false,
            true};
  fail("tokenizer: unknown pre-tokenizer type tokenizer.ggml.pre = '", pre, "'");
}

}  // namespace og::tok
