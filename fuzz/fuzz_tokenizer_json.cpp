// libFuzzer target: HF tokenizer.json. The input is the file's text; a
// tokenizer that loads is exercised (fuzz_tokenizer_common.h). Loading errors
// must be og::Error; anything else (a crash, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz_tokenizer_common.h"
#include "tokenizer/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto tok = og::tok::load_tokenizer_json_text(text, "tokenizer.json");
    og::fuzz::exercise_tokenizer(*tok, text);
  } catch (const og::Error&) {
  }
  return 0;
}
