// place_weights_in_huge_pages: the weight matrices copied out of the source
// (a mapped file) into one huge-page buffer, the views repointed, each copy
// rewritten in place into the layout the matmul kernels prefer (Q4_K ->
// Q4_K_R with AVX2 or Q4_K_R16 with AVX-512, Q5_K -> Q5_K_R, Q6_K -> Q6_K_R
// with AVX2 or Q6_K_R16 with AVX-512, Q8_0 -> Q8_0_R, Q4_0 -> Q4_0_R on x86):
// the repacked copy is the only one kept. A mixture of experts' expert
// matrices stay in the mapped file unless copy_experts (--experts-in-memory).
#include <cstring>
#include <vector>

#include "base/huge_pages.h"
#include "kernels/ops.h"
#include "model/weights.h"

namespace og {

HugePageBuffer place_weights_in_huge_pages(Weights& w, bool release_source, bool copy_experts) {
  // Every matrix read in full per token. An untied embedding is only read a
  // few rows per token, so it stays where it is (no copy, no resident bytes).
  const bool tied = w.output.data != nullptr && w.output.data == w.token_embd.data;
  // The per-layer input table (gemma4) is looked up like an embedding and
  // stays mapped too: it is most of such a file.
  std::vector<TensorView*> views;
  if (w.output.data) views.push_back(&w.output);  // an encoder has none
  if (w.per_layer_model_proj.data) views.push_back(&w.per_layer_model_proj);
  for (LayerWeights& L : w.layers) {
    for (TensorView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.w_pl_gate, &L.w_pl_proj,
                          &L.w_router})
      if (v->data) views.push_back(v);
    // Experts: by default used in place from the file, in its layout (the
    // plain kernels read any alignment; --mmap runs them so already), so only
    // the experts a step routes to are paged in and a file larger than memory
    // runs. No madvise on their ranges: MADV_RANDOM would fault a routed
    // expert's megabytes in 4 KiB reads (each is read whole, in order, so the
    // default readahead is right), and MADV_WILLNEED would read every expert.
    // copy_experts: each one's matrices are copied and repacked like a dense one.
    if (copy_experts)
      for (auto* set : {&L.w_gate_exps, &L.w_up_exps, &L.w_down_exps})
        for (TensorView& v : *set) views.push_back(&v);
  }
  size_t total = 0;
  for (const TensorView* v : views) total += (static_cast<size_t>(v->nbytes()) + 63) / 64 * 64;
  HugePageBuffer buf(total);
  size_t off = 0;
  for (TensorView* v : views) {
    const size_t n = static_cast<size_t>(v->nbytes());
    std::memcpy(buf.data() + off, v->data, n);
    // One tensor at a time, so peak memory stays near one copy of the weights.
    if (release_source) release_file_pages(v->data, n);
    v->data = buf.data() + off;
    const DType layout = kernels::matmul_layout(v->dtype);
    if (layout != v->dtype) {
      kernels::repack_rows(v->dtype, layout, buf.data() + off, v->shape[0], v->shape[1]);
      v->dtype = layout;
    }
    off += (n + 63) / 64 * 64;
  }
  if (tied) {  // get_row reads the repacked layouts too
    w.token_embd.data = w.output.data;
    w.token_embd.dtype = w.output.dtype;
  }
  return buf;
}

}  // namespace og
