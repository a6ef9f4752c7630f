// Weight placement: the default huge-page copy and LoadOptions::mmap_only give
// the same greedy outputs on a real file (GGUF tied/untied, HF), and the copy
// really moves the matrices out of the mapped file.
#include <gtest/gtest.h>

#include <cstring>

#include "model/loader.h"
#include "model_test_util.h"

namespace og {
namespace {

const std::string kModels = std::string(OG_TESTDATA_DIR) + "/models/";

std::vector<int32_t> greedy_with(const std::string& path, bool mmap_only) {
  LoadOptions opts;
  opts.mmap_only = mmap_only;
  std::unique_ptr<Model> m = Model::load(path, opts);
  KvPolicy policy;
  policy.max_capacity = 128;
  auto cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), policy);
  return test::greedy(*m, *cache, {1, 403, 407}, 40);
}

TEST(WeightPlacement, HugePageCopyMatchesMmapOnly) {
  for (const char* f : {"stories260K/stories260K.gguf", "stories260K/stories260K-ggml-org.gguf", "stories260K-hf"}) {
    const std::string path = kModels + f;
    EXPECT_EQ(greedy_with(path, false), greedy_with(path, true)) << path;
  }
}

TEST(WeightPlacement, CopyRepointsEveryMatrixAndKeepsUntiedEmbeddingMapped) {
  for (bool tied : {false, true}) {
    std::vector<float> src(10 * 64 * 8);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
    auto view = [&](int k) { return TensorView{src.data() + k * 512, DType::F32, {8, 64}, "m"}; };
    Weights w;
    w.token_embd = view(0);
    w.output = tied ? w.token_embd : view(1);
    w.layers.resize(1);
    LayerWeights& L = w.layers[0];
    L.wq = view(2), L.wk = view(3), L.wv = view(4), L.wo = view(5);
    L.w_gate = view(6), L.w_up = view(7), L.w_down = view(8);
    const Weights before = w;
    HugePageBuffer buf = place_weights_in_huge_pages(w, false, false);
    auto inside = [&](const void* p) {
      auto* b = static_cast<const uint8_t*>(p);
      return b >= buf.data() && b < buf.data() + buf.size();
    };
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % (2u << 20), 0u);
    EXPECT_TRUE(inside(w.output.data));
    if (tied)
      EXPECT_EQ(w.token_embd.data, w.output.data);
    else
      EXPECT_EQ(w.token_embd.data, before.token_embd.data);  // read a few rows per token: not copied
    const TensorView* now[] = {&w.output, &L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
    const LayerWeights& B = before.layers[0];
    const TensorView* was[] = {&before.output, &B.wq, &B.wk, &B.wv, &B.wo, &B.w_gate, &B.w_up, &B.w_down};
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(inside(now[i]->data)) << i;
      EXPECT_EQ(std::memcmp(now[i]->data, was[i]->data, static_cast<size_t>(was[i]->nbytes())), 0) << i;
    }
  }
}

}  // namespace
}  // namespace og
