// libFuzzer target: SafetensorsSource::parse over arbitrary bytes, then a read
// of the first and last byte of every tensor it accepted.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "format/safetensors.h"

namespace {
volatile uint8_t g_sink;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<og::SafetensorsSource> s;
  try {
    s = og::SafetensorsSource::parse(data, size, "fuzz.safetensors");
  } catch (const og::Error&) {
    return 0;
  }
  for (const og::TensorInfo& t : s->tensors()) {
    if (t.nbytes > 0) g_sink = static_cast<uint8_t>(t.data[0] ^ t.data[t.nbytes - 1]);
    try {
      og::TensorView v = og::tensor_view(*s, t);
      if (static_cast<uint64_t>(v.nbytes()) != t.nbytes) __builtin_trap();
    } catch (const og::Error&) {
    }
  }
  return 0;
}
