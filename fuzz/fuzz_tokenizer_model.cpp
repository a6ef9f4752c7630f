// libFuzzer target: SentencePiece tokenizer.model (a serialized ModelProto,
// parsed by libsentencepiece). A tokenizer that loads is exercised
// (fuzz_tokenizer_common.h); loading errors must be og::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz_tokenizer_common.h"
#include "tokenizer/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto tok = og::tok::load_sentencepiece_bytes(bytes, "tokenizer.model");
    og::fuzz::exercise_tokenizer(*tok, "Once upon a time");
  } catch (const og::Error&) {
  }
  return 0;
}
