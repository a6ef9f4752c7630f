// The low-bit types against ggml itself (a peer test: skipped without the
// library): blocks that ggml's reference quantizers write decode to the same
// values through our dequantize_row as through ggml's own decoder, and blocks
// our encoders write decode the same through ggml's, with no more error than
// ggml's reference (importance-free) encoders. The library is
// $OFFGRAPH_GGML_LIB, else ../peer/llama.cpp/build/bin/libggml-base.so
// beside the source tree; it is loaded at run time (dlopen), never linked.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "kernels/test_util.h"

namespace og::kernels {
namespace {

// ggml.h's struct ggml_type_traits (ggml 0.9 and later), the fields read here.
struct GgmlTypeTraits {
  const char* type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  void (*to_float)(const void* x, float* y, int64_t k);
  void (*from_float_ref)(const float* x, void* y, int64_t k);
};
using GetTraits = const GgmlTypeTraits* (*)(int type);

GetTraits load_ggml() {
  const char* env = std::getenv("OFFGRAPH_GGML_LIB");
  const std::string path = env && *env ? env : std::string(OG_SOURCE_DIR) + "/../peer/llama.cpp/build/bin/libggml-base.so";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  return h ? reinterpret_cast<GetTraits>(dlsym(h, "ggml_get_type_traits")) : nullptr;
}

TEST(LowBitPeer, DecodesAsGgmlDoes) {
  const GetTraits traits = load_ggml();
  if (!traits) GTEST_SKIP() << "no libggml-base.so (set OFFGRAPH_GGML_LIB)";
  const int64_t n = 4096;
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4}) {
    const GgmlTypeTraits* g = traits(static_cast<int>(t));
    const std::string name = dtype_name(static_cast<uint32_t>(t));
    ASSERT_TRUE(g && g->type_name && g->to_float && g->from_float_ref) << name;
    std::string ggml_name = g->type_name;  // "q2_K"
    for (char& c : ggml_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_EQ(ggml_name, name);
    ASSERT_EQ(g->blck_size, dtype_info(t).block) << name;
    ASSERT_EQ(static_cast<int64_t>(g->type_size), dtype_info(t).block_bytes) << name;
    for (uint32_t seed : {3u, 4u}) {
      const std::vector<float> x = testing::random_normal(n, seed, seed == 3 ? 1.0f : 0.01f);
      std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(t, n)));
      std::vector<float> ours(n), theirs(n);
      g->from_float_ref(x.data(), q.data(), n);  // ggml's blocks
      dequantize_row(t, q.data(), ours.data(), n);
      g->to_float(q.data(), theirs.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(ours[i], theirs[i]) << name << " ggml-encoded, element " << i;
      quantize_row(t, x.data(), q.data(), n);  // our blocks
      dequantize_row(t, q.data(), ours.data(), n);
      g->to_float(q.data(), theirs.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(ours[i], theirs[i]) << name << " our encoding, element " << i;
      std::vector<uint8_t> gq(q.size());
      std::vector<float> gy(n);
      g->from_float_ref(x.data(), gq.data(), n);
      g->to_float(gq.data(), gy.data(), n);
      const double rms_ours = testing::rel_rms(ours, x), rms_ggml = testing::rel_rms(gy, x);
      std::printf("  %-6s rel rms ours %.4f, ggml's reference encoder %.4f\n", name.c_str(), rms_ours, rms_ggml);
      EXPECT_LE(rms_ours, 1.02 * rms_ggml) << name;  // our scale search is at least as good (measured 2-11 % better)
    }
  }
}

}  // namespace
}  // namespace og::kernels
