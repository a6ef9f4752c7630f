// libFuzzer target: GgufFile::parse over arbitrary bytes, then every typed
// getter on every key and a read of the first and last byte of every tensor
// (so ASan sees any range the parser let through).
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "format/gguf.h"

namespace {
volatile uint8_t g_sink;

template <class F>
void ignore_errors(F&& f) {
  try {
    f();
  } catch (const og::Error&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<og::GgufFile> g;
  try {
    g = og::GgufFile::parse(data, size, "fuzz.gguf");
  } catch (const og::Error&) {
    return 0;
  }
  for (const auto& kv : g->metadata()) {
    const std::string& key = kv.first;
    ignore_errors([&] { g->get_string(key); });
    ignore_errors([&] { g->get_int(key); });
    ignore_errors([&] { g->get_float(key); });
    ignore_errors([&] { g->get_bool(key); });
    ignore_errors([&] { g->get_string_array(key); });
    ignore_errors([&] { g->get_float_array(key); });
    ignore_errors([&] { g->get_int_array(key); });
    if (!(kv.second == kv.second)) __builtin_trap();
  }
  for (const og::TensorInfo& t : g->tensors()) {
    if (g->find(t.name) != &t) __builtin_trap();  // names are unique
    if (t.nbytes > 0) g_sink = static_cast<uint8_t>(t.data[0] ^ t.data[t.nbytes - 1]);
    ignore_errors([&] {
      og::TensorView v = og::tensor_view(*g, t);
      if (static_cast<uint64_t>(v.nbytes()) != t.nbytes) __builtin_trap();
    });
  }
  return 0;
}
