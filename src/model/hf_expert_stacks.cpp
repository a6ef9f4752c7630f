// gpt-oss's fused HF expert tensors as [E, rows, cols] stacks (see
// hf_expert_stacks.h): transposes and de-interleaving of the float form, the
// MXFP4 blocks re-laid as ggml blocks, and the source that lists them.
#include "model/hf_expert_stacks.h"

#include <cstring>
#include <map>

#include "base/error.h"
#include "base/huge_pages.h"
#include "model/weights.h"
#include "tensor/quant_blocks.h"

namespace og {
namespace {

bool is_float(uint32_t id) {
  return id == static_cast<uint32_t>(DType::F32) || id == static_cast<uint32_t>(DType::F16) ||
         id == static_cast<uint32_t>(DType::BF16);
}

// One presented tensor: its info, and the bytes it points into (owned here
// unless it aliases a source tensor).
struct Stack {
  TensorInfo info;
  std::vector<uint8_t> bytes;
};

class GptOssExpertStacks : public TensorSource {
 public:
  GptOssExpertStacks(std::shared_ptr<const TensorSource> src, const ModelConfig& c) : src_(std::move(src)) {
    for (int l = 0; l < c.n_layers(); ++l) add_layer(c, l);
    infos_ = src_->tensors();
    for (const auto& s : stacks_) infos_.push_back(s->info);
    for (size_t i = src_->tensors().size(); i < infos_.size(); ++i) index_[infos_[i].name] = i;
  }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  const TensorInfo* find(std::string_view name) const override {
    auto it = index_.find(std::string(name));
    return it != index_.end() ? &infos_[it->second] : src_->find(name);
  }
  std::string source_name() const override { return src_->source_name(); }

 private:
  const TensorInfo& require(const std::string& name, const std::vector<int64_t>& shape, bool u8,
                            const std::string& what) const {
    const TensorInfo* t = src_->find(name);
    OG_CHECK(t != nullptr, src_->source_name(), ": missing tensor ", name, what);
    OG_CHECK(t->shape == shape, src_->source_name(), ": tensor ", name, " has shape ", shape_str(t->shape),
             ", expected ", shape_str(shape));
    OG_CHECK(u8 ? t->type_name == "U8" : is_float(t->type_id), src_->source_name(), ": tensor ", name, " has type ",
             t->type_name, ", expected ", u8 ? "U8" : "F32, F16 or BF16");
    return *t;
  }

  Stack& add(const std::string& name, uint32_t type_id, std::vector<int64_t> shape, uint64_t nbytes) {
    auto s = std::make_unique<Stack>();
    s->bytes.resize(static_cast<size_t>(nbytes));
    s->info.name = name;
    s->info.type_id = type_id;
    s->info.type_name = dtype_name(type_id);
    s->info.known_type = true;
    s->info.shape = std::move(shape);
    s->info.data = s->bytes.data();
    s->info.nbytes = nbytes;
    stacks_.push_back(std::move(s));
    return *stacks_.back();
  }

  void add_layer(const ModelConfig& c, int l) {
    const LayerConfig& L = c.layers[l];
    const int64_t E = L.n_experts, ff = L.d_ff_expert, d = c.d_model;
    const std::string base = cat(c.hf_prefix, "layers.", l, ".", c.hf_moe.block, ".experts.");
    auto name = [&](TensorRole r) { return hf_expert_stack_name(c, l, r); };
    if (src_->find(base + "gate_up_proj_blocks") != nullptr) {
      mxfp4_pair(base + "gate_up_proj", E, ff, d, true, name(TensorRole::kGateExps), name(TensorRole::kUpExps));
      mxfp4_pair(base + "down_proj", E, d, ff, false, name(TensorRole::kDownExps), "");
    } else {
      float_gate_up(base + "gate_up_proj", E, ff, d, name(TensorRole::kGateExps), name(TensorRole::kUpExps));
      float_down(base + "down_proj", E, ff, d, name(TensorRole::kDownExps));
    }
    // Biases: gate at even, up at odd entries; down as stored (an alias, nothing copied).
    const TensorInfo& gub = require(base + "gate_up_proj_bias", {E, 2 * ff}, false, "");
    const int64_t es = static_cast<int64_t>(gub.nbytes) / (E * 2 * ff);
    for (int half = 0; half < 2; ++half) {
      Stack& s = add(name(half ? TensorRole::kUpExpsBias : TensorRole::kGateExpsBias), gub.type_id, {E, ff},
                     static_cast<uint64_t>(E * ff * es));
      for (int64_t i = 0; i < E * ff; ++i) std::memcpy(s.bytes.data() + i * es, gub.data + (2 * i + half) * es, es);
    }
    const TensorInfo& db = require(base + "down_proj_bias", {E, d}, false, "");
    auto alias = std::make_unique<Stack>();
    alias->info = db;
    alias->info.name = name(TensorRole::kDownExpsBias);
    stacks_.push_back(std::move(alias));
  }

  // gate_up_proj [E, d, 2 ff] -> gate and up stacks [E, ff, d] (transposed, de-interleaved).
  void float_gate_up(const std::string& n, int64_t E, int64_t ff, int64_t d, const std::string& gate,
                     const std::string& up) {
    const TensorInfo& t = require(n, {E, d, 2 * ff}, false, " (or its MXFP4 form gate_up_proj_blocks and _scales)");
    const int64_t es = static_cast<int64_t>(t.nbytes) / (E * d * 2 * ff);
    for (int half = 0; half < 2; ++half) {
      Stack& s = add(half ? up : gate, t.type_id, {E, ff, d}, static_cast<uint64_t>(E * ff * d * es));
      for (int64_t e = 0; e < E; ++e)
        for (int64_t j = 0; j < ff; ++j)
          for (int64_t i = 0; i < d; ++i)
            std::memcpy(s.bytes.data() + ((e * ff + j) * d + i) * es, t.data + ((e * d + i) * 2 * ff + 2 * j + half) * es,
                        es);
    }
    release_file_pages(t.data, t.nbytes);
  }

  // down_proj [E, ff, d] -> the down stack [E, d, ff].
  void float_down(const std::string& n, int64_t E, int64_t ff, int64_t d, const std::string& down) {
    const TensorInfo& t = require(n, {E, ff, d}, false, " (or its MXFP4 form down_proj_blocks and _scales)");
    const int64_t es = static_cast<int64_t>(t.nbytes) / (E * ff * d);
    Stack& s = add(down, t.type_id, {E, d, ff}, static_cast<uint64_t>(E * d * ff * es));
    for (int64_t e = 0; e < E; ++e)
      for (int64_t o = 0; o < d; ++o)
        for (int64_t j = 0; j < ff; ++j)
          std::memcpy(s.bytes.data() + ((e * d + o) * ff + j) * es, t.data + ((e * ff + j) * d + o) * es, es);
    release_file_pages(t.data, t.nbytes);
  }

  // <n>_blocks [E, R, cols / 32, 16] + <n>_scales [E, R, cols / 32] (R = 2 rows
  // interleaved when `interleaved`, else rows) -> MXFP4 stacks [E, rows, cols].
  void mxfp4_pair(const std::string& n, int64_t E, int64_t rows, int64_t cols, bool interleaved,
                  const std::string& first, const std::string& second) {
    OG_CHECK(cols % 32 == 0, src_->source_name(), ": tensor ", n, "_blocks: MXFP4 needs a multiple of 32 columns, got ",
             cols);
    const int64_t R = interleaved ? 2 * rows : rows, nb = cols / 32;
    const TensorInfo& blocks = require(n + "_blocks", {E, R, nb, 16}, true, "");
    const TensorInfo& scales = require(n + "_scales", {E, R, nb}, true, " (the E8M0 scales of " + n + "_blocks)");
    const uint32_t id = static_cast<uint32_t>(DType::MXFP4);
    const int parts = interleaved ? 2 : 1;
    for (int half = 0; half < parts; ++half) {
      Stack& s = add(half ? second : first, id, {E, rows, cols},
                     static_cast<uint64_t>(E * rows * nb * sizeof(BlockMXFP4)));
      auto* out = reinterpret_cast<BlockMXFP4*>(s.bytes.data());
      for (int64_t e = 0; e < E; ++e)
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t src_row = e * R + (interleaved ? 2 * r + half : r);
          for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* q = blocks.data + (src_row * nb + b) * 16;
            BlockMXFP4& o = out[(e * rows + r) * nb + b];
            o.e = scales.data[src_row * nb + b];
            // Element k: HF byte k / 2, nibble k % 2; ggml byte k % 16, nibble k / 16.
            std::memset(o.qs, 0, sizeof(o.qs));
            for (int k = 0; k < 32; ++k) {
              const uint8_t code = (q[k / 2] >> (4 * (k % 2))) & 0x0F;
              o.qs[k % 16] |= static_cast<uint8_t>(code << (4 * (k / 16)));
            }
          }
        }
    }
    release_file_pages(blocks.data, blocks.nbytes);
    release_file_pages(scales.data, scales.nbytes);
  }

  std::shared_ptr<const TensorSource> src_;
  std::vector<std::unique_ptr<Stack>> stacks_;
  std::vector<TensorInfo> infos_;
  std::map<std::string, size_t> index_;
};

}  // namespace

std::shared_ptr<const TensorSource> with_gpt_oss_expert_stacks(std::shared_ptr<const TensorSource> src,
                                                               const ModelConfig& c) {
  return std::make_shared<GptOssExpertStacks>(std::move(src), c);
}

}  // namespace og
