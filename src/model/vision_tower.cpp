// Gemma 3's SigLIP tower and projector (vision_tower.h). Matmuls go through
// kernels::matmul (any weight dtype with kernels), attention through the f32
// attend kernels over the whole image (every patch sees every patch), one
// pool task per (head, block of queries). tests/model/vision_tower_test.cpp
// holds it to a plain twin written with loops.
#include "model/vision_tower.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>

#include "base/error.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "format/hf_config.h"
#include "kernels/ops.h"

namespace og {
namespace {

int64_t need_int(const nlohmann::json& obj, const char* key, const std::string& file, const char* where) {
  const std::optional<int64_t> v = json_int(obj, key, file);
  OG_CHECK(v.has_value(), file, ": ", where, key, " is missing (needed for the vision tower)");
  return *v;
}

const TensorInfo& require(const TensorSource& src, const std::string& name, const std::vector<int64_t>& shape) {
  const TensorInfo* t = src.find(name);
  OG_CHECK(t != nullptr, src.source_name(), ": vision tensor ", name, " is missing");
  OG_CHECK(t->shape == shape, src.source_name(), ": vision tensor ", name, " has shape ", shape_str(t->shape),
           ", expected ", shape_str(shape));
  return *t;
}

// All of a tensor's values as f32, row by row (any dtype with kernels).
std::vector<float> to_f32(const TensorSource& src, const std::string& name, const std::vector<int64_t>& shape) {
  const TensorView v = tensor_view(src, require(src, name, shape));
  std::vector<float> out(static_cast<size_t>(v.numel()));
  for (int64_t r = 0; r < v.rows(); ++r)
    kernels::dequantize_row(v.dtype, v.row(r), out.data() + r * v.cols(), v.cols());
  return out;
}

TensorView matrix(const TensorSource& src, const std::string& name, int64_t rows, int64_t cols) {
  TensorView v = tensor_view(src, require(src, name, {rows, cols}));
  OG_CHECK(kernels::weight_dtype_supported(v.dtype), src.source_name(), ": vision tensor ", name,
           " has a dtype without matmul kernels");
  return v;
}

// Bytes of activation rows one matmul call of linear() takes: a chunk stays
// in L2 (1 MB a core on Zen 5) while every weight row passes over it.
constexpr int64_t kChunkBytes = 256 * 1024;

// y[n, out] = x[n, in] · W^T + b. The kernels' matmul splits the weight's
// rows over the threads and runs each tile of weight rows over all n
// activation rows: for 4096 patches x is 19 MB (fc2's input 70 MB), streamed
// from memory again for every tile. Here the threads take chunks of x's rows
// instead, each running the whole matmul on its chunk (the pool runs a nested
// matmul inline), so x is read from L2 and only the weights (shared in L3)
// stream. Each output is the kernel's own sum either way.
void linear(const TensorView& w, const std::vector<float>& b, const float* x, int64_t n, float* y) {
  const int64_t in = w.shape[1], out = w.shape[0];
  const int64_t rows = std::clamp<int64_t>(kChunkBytes / (in * 4) / 4 * 4, 4, 256);
  thread_pool().parallel_for((n + rows - 1) / rows, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t i0 = c * rows, m = std::min(rows, n - i0);
      kernels::matmul(w, x + i0 * in, m, y + i0 * out);
      for (int64_t i = i0; i < i0 + m; ++i) kernels::add(y + i * out, b.data(), out);
    }
  });
}

// Adds the seconds since the last lap to *slot when timing (times not null).
class PhaseClock {
 public:
  explicit PhaseClock(VisionTowerTimes* times) : times_(times), t_(std::chrono::steady_clock::now()) {}
  void lap(double VisionTowerTimes::*slot) {
    if (!times_) return;
    const auto now = std::chrono::steady_clock::now();
    times_->*slot += std::chrono::duration<double>(now - t_).count();
    t_ = now;
  }

 private:
  VisionTowerTimes* times_;
  std::chrono::steady_clock::time_point t_;
};

}  // namespace

int64_t VisionTowerConfig::tokens_per_side() const {
  int64_t s = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(mm_tokens_per_image))));
  return s * s == mm_tokens_per_image ? s : 0;
}

void VisionTowerConfig::check() const {
  OG_CHECK(image_size > 0 && patch_size > 0 && hidden > 0 && intermediate > 0 && n_layers > 0 && n_heads > 0 &&
               text_hidden > 0 && mm_tokens_per_image > 0,
           "vision tower: image_size, patch_size, hidden_size, intermediate_size, num_hidden_layers, "
           "num_attention_heads, mm_tokens_per_image and the text hidden_size must be positive");
  OG_CHECK(image_size % patch_size == 0, "vision tower: patch_size ", patch_size, " does not divide image_size ",
           image_size);
  OG_CHECK(hidden % n_heads == 0, "vision tower: num_attention_heads ", n_heads, " does not divide hidden_size ",
           hidden);
  const int64_t t = tokens_per_side();
  OG_CHECK(t > 0 && patches_per_side() % t == 0, "vision tower: mm_tokens_per_image ", mm_tokens_per_image,
           " is not a square whose side divides the ", patches_per_side(), "x", patches_per_side(), " patch grid");
  OG_CHECK(layer_norm_eps > 0, "vision tower: layer_norm_eps must be positive");
}

VisionTowerConfig gemma3_vision_config(const nlohmann::json& config, const std::string& file) {
  OG_CHECK(config.contains("vision_config") && config["vision_config"].is_object(), file,
           ": vision_config is missing (the model has no vision tower)");
  const nlohmann::json& v = config["vision_config"];
  VisionTowerConfig c;
  c.hidden = need_int(v, "hidden_size", file, "vision_config.");
  c.intermediate = need_int(v, "intermediate_size", file, "vision_config.");
  c.n_layers = need_int(v, "num_hidden_layers", file, "vision_config.");
  c.n_heads = need_int(v, "num_attention_heads", file, "vision_config.");
  c.patch_size = need_int(v, "patch_size", file, "vision_config.");
  c.image_size = need_int(v, "image_size", file, "vision_config.");
  if (const auto eps = json_number(v, "layer_norm_eps", file)) c.layer_norm_eps = static_cast<float>(*eps);
  if (const auto n = json_int(config, "mm_tokens_per_image", file)) c.mm_tokens_per_image = *n;
  OG_CHECK(config.contains("text_config") && config["text_config"].is_object(), file, ": text_config is missing");
  const nlohmann::json& t = config["text_config"];
  c.text_hidden = need_int(t, "hidden_size", file, "text_config.");
  c.check();
  return c;
}

std::string gemma3_vision_prefix(const TensorSource& src) {
  for (const char* p : {"", "model."})
    if (src.find(std::string(p) + "vision_tower.vision_model.embeddings.patch_embedding.weight")) return p;
  throw Error(src.source_name() +
              ": vision tensor vision_tower.vision_model.embeddings.patch_embedding.weight is missing "
              "(not a Gemma 3 checkpoint with a vision tower)");
}

namespace {

// Where a tower's tensors are in one file layout. layer(l, part) names layer
// l's tensor: part is one of the HF names' tails (layer_norm1.weight,
// self_attn.q_proj.bias, mlp.fc1.weight, ...).
struct TowerNames {
  std::string patch_w, patch_b, pos, post_w, post_b, soft_norm, proj;
  std::function<std::string(int64_t, const std::string&)> layer;
  float soft_norm_offset = 0;  // added to the soft norm's weight at load
};

VisionTowerWeights bind_tower(const VisionTowerConfig& c, const TensorSource& src, const TowerNames& n) {
  c.check();
  const int64_t d = c.hidden, p = c.patch_size;
  VisionTowerWeights w;
  w.patch = tensor_view(src, require(src, n.patch_w, {d, 3, p, p}));
  OG_CHECK(kernels::weight_dtype_supported(w.patch.dtype), src.source_name(), ": vision tensor ", n.patch_w,
           " has a dtype without matmul kernels");
  w.patch.shape = {d, 3 * p * p};
  w.patch_b = to_f32(src, n.patch_b, {d});
  w.pos = to_f32(src, n.pos, {c.n_patches(), d});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    auto name = [&](const char* part) { return n.layer(l, part); };
    VisionLayerWeights L;
    L.ln1_w = to_f32(src, name("layer_norm1.weight"), {d});
    L.ln1_b = to_f32(src, name("layer_norm1.bias"), {d});
    L.ln2_w = to_f32(src, name("layer_norm2.weight"), {d});
    L.ln2_b = to_f32(src, name("layer_norm2.bias"), {d});
    L.wq = matrix(src, name("self_attn.q_proj.weight"), d, d);
    L.wk = matrix(src, name("self_attn.k_proj.weight"), d, d);
    L.wv = matrix(src, name("self_attn.v_proj.weight"), d, d);
    L.wo = matrix(src, name("self_attn.out_proj.weight"), d, d);
    L.bq = to_f32(src, name("self_attn.q_proj.bias"), {d});
    L.bk = to_f32(src, name("self_attn.k_proj.bias"), {d});
    L.bv = to_f32(src, name("self_attn.v_proj.bias"), {d});
    L.bo = to_f32(src, name("self_attn.out_proj.bias"), {d});
    L.fc1 = matrix(src, name("mlp.fc1.weight"), c.intermediate, d);
    L.b1 = to_f32(src, name("mlp.fc1.bias"), {c.intermediate});
    L.fc2 = matrix(src, name("mlp.fc2.weight"), d, c.intermediate);
    L.b2 = to_f32(src, name("mlp.fc2.bias"), {d});
    w.layers.push_back(std::move(L));
  }
  w.post_w = to_f32(src, n.post_w, {d});
  w.post_b = to_f32(src, n.post_b, {d});
  w.soft_norm = to_f32(src, n.soft_norm, {d});
  for (float& x : w.soft_norm) x += n.soft_norm_offset;
  // Both layouts hold the [vision, text] matrix that transformers multiplies
  // by from the right; the matmul kernels want [out, in], so it is transposed once here.
  const std::vector<float> proj = to_f32(src, n.proj, {d, c.text_hidden});
  w.proj.resize(proj.size());
  for (int64_t i = 0; i < d; ++i)
    for (int64_t o = 0; o < c.text_hidden; ++o) w.proj[o * d + i] = proj[i * c.text_hidden + o];
  return w;
}

}  // namespace

VisionTowerWeights bind_gemma3_vision(const VisionTowerConfig& c, const TensorSource& src) {
  const std::string top = gemma3_vision_prefix(src);
  const std::string vm = top + "vision_tower.vision_model.";
  TowerNames n;
  n.patch_w = vm + "embeddings.patch_embedding.weight";
  n.patch_b = vm + "embeddings.patch_embedding.bias";
  n.pos = vm + "embeddings.position_embedding.weight";
  n.post_w = vm + "post_layernorm.weight";
  n.post_b = vm + "post_layernorm.bias";
  n.soft_norm = top + "multi_modal_projector.mm_soft_emb_norm.weight";
  n.proj = top + "multi_modal_projector.mm_input_projection_weight";
  n.layer = [&](int64_t l, const std::string& part) { return vm + "encoder.layers." + std::to_string(l) + "." + part; };
  n.soft_norm_offset = 1.0f;  // Gemma3RMSNorm multiplies by 1 + weight
  return bind_tower(c, src, n);
}

VisionTowerConfig gemma3_mmproj_config(const GgufFile& f) {
  const std::string file = f.source_name();
  const std::optional<std::string> type = f.get_string("clip.projector_type");
  OG_CHECK(type.has_value(), file, ": clip.projector_type is missing (not an mmproj file?)");
  OG_CHECK(*type == "gemma3", file, ": clip.projector_type is \"", *type, "\"; only gemma3 is supported");
  auto need = [&](const char* key) {
    const std::optional<int64_t> v = f.get_int(key);
    OG_CHECK(v.has_value(), file, ": ", key, " is missing (needed for the vision tower)");
    return *v;
  };
  VisionTowerConfig c;
  c.image_size = need("clip.vision.image_size");
  c.patch_size = need("clip.vision.patch_size");
  c.hidden = need("clip.vision.embedding_length");
  c.intermediate = need("clip.vision.feed_forward_length");
  c.n_layers = need("clip.vision.block_count");
  c.n_heads = need("clip.vision.attention.head_count");
  c.text_hidden = need("clip.vision.projection_dim");
  if (const auto eps = f.get_float("clip.vision.attention.layer_norm_epsilon"))
    c.layer_norm_eps = static_cast<float>(*eps);
  // The pooling kernel's side: 4 for every Gemma 3 size, written only by files that differ.
  const int64_t k = f.get_int("clip.vision.projector.scale_factor").value_or(4);
  OG_CHECK(c.patch_size > 0 && c.image_size % c.patch_size == 0 && k > 0 && c.patches_per_side() % k == 0, file,
           ": clip.vision.projector.scale_factor ", k, " does not divide the patch grid (image_size ", c.image_size,
           ", patch_size ", c.patch_size, ")");
  c.mm_tokens_per_image = (c.patches_per_side() / k) * (c.patches_per_side() / k);
  c.check();
  return c;
}

VisionTowerWeights bind_gemma3_mmproj(const VisionTowerConfig& c, const TensorSource& src) {
  c.check();
  // llama.cpp's converters name SigLIP's fc1 ffn_up and fc2 ffn_down, but
  // older ones swapped them (fc1 as ffn_down); the shapes tell which is which
  // wherever the widths differ (llama.cpp decides the same way).
  bool fc1_is_down = false;
  if (c.intermediate != c.hidden) {
    const TensorInfo* down = src.find("v.blk.0.ffn_down.weight");
    fc1_is_down = down != nullptr && down->shape == std::vector<int64_t>{c.intermediate, c.hidden};
  }
  static const std::pair<const char*, const char*> kParts[] = {
      {"layer_norm1.", "ln1."},         {"layer_norm2.", "ln2."},          {"self_attn.q_proj.", "attn_q."},
      {"self_attn.k_proj.", "attn_k."}, {"self_attn.v_proj.", "attn_v."}, {"self_attn.out_proj.", "attn_out."},
      {"mlp.fc1.", "ffn_up."},          {"mlp.fc2.", "ffn_down."}};
  TowerNames n;
  n.patch_w = "v.patch_embd.weight";
  n.patch_b = "v.patch_embd.bias";
  n.pos = "v.position_embd.weight";
  n.post_w = "v.post_ln.weight";
  n.post_b = "v.post_ln.bias";
  n.soft_norm = "mm.soft_emb_norm.weight";  // the converters already added Gemma's 1
  n.proj = "mm.input_projection.weight";
  n.layer = [&](int64_t l, const std::string& part) {
    for (const auto& [hf, gguf] : kParts) {
      const std::string h = hf;
      if (part.compare(0, h.size(), h) != 0) continue;
      std::string g = gguf;
      if (fc1_is_down && h == "mlp.fc1.") g = "ffn_down.";
      if (fc1_is_down && h == "mlp.fc2.") g = "ffn_up.";
      return "v.blk." + std::to_string(l) + "." + g + part.substr(h.size());
    }
    throw Error("vision tower: no mmproj name for " + part);
  };
  return bind_tower(c, src, n);
}

// One encode's activations, reused by every layer and every image (ScratchSlot).
struct VisionTower::Scratch {
  explicit Scratch(const VisionTowerConfig& c) {
    const int64_t n = c.n_patches(), d = c.hidden;
    const int64_t blocks = (n + kernels::kKeyBlock - 1) / kernels::kKeyBlock;
    for (std::vector<float>* b : {&x, &h, &q, &k, &v, &a, &vh}) b->resize(static_cast<size_t>(n * d));
    kb.resize(static_cast<size_t>(c.n_heads * blocks * kernels::kKeyBlock * c.head_dim()));
    u.resize(static_cast<size_t>(n * c.intermediate));
    ones.assign(static_cast<size_t>(c.intermediate), 1.0f);
  }
  std::vector<float> x, h, q, k, v, a, kb, vh, u, ones;
};

struct VisionTower::ScratchSlot {
  std::mutex mu;
  std::unique_ptr<Scratch> s;
};

VisionTower::VisionTower(VisionTowerConfig c, VisionTowerWeights w)
    : c_(c), w_(std::move(w)), scratch_(std::make_shared<ScratchSlot>()) {
  c_.check();
  OG_CHECK(static_cast<int64_t>(w_.layers.size()) == c_.n_layers, "vision tower: ", w_.layers.size(),
           " layers bound, the config says ", c_.n_layers);
  std::vector<TensorView*> moved;
  size_t total = 0;
  auto want = [&](TensorView& v) {
    if (v.data && kernels::matmul_layout(v.dtype) != v.dtype) {
      moved.push_back(&v);
      total += (static_cast<size_t>(v.nbytes()) + 63) / 64 * 64;
    }
  };
  want(w_.patch);
  for (VisionLayerWeights& l : w_.layers)
    for (TensorView* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.fc1, &l.fc2}) want(*v);
  if (moved.empty()) return;
  repacked_ = std::make_shared<HugePageBuffer>(total);
  size_t off = 0;
  for (TensorView* v : moved) {
    uint8_t* dst = repacked_->data() + off;
    std::memcpy(dst, v->data, static_cast<size_t>(v->nbytes()));
    const DType layout = kernels::matmul_layout(v->dtype);
    kernels::repack_rows(v->dtype, layout, dst, v->shape[0], v->shape[1]);
    v->data = dst;
    v->dtype = layout;
    off += (static_cast<size_t>(v->nbytes()) + 63) / 64 * 64;
  }
}

namespace {

// Full (non-causal) attention of every patch over every patch, flash-style:
// per task one head and kQueryBlock queries, keys folded kKeyFold at a time
// with an online softmax (running max m, sum l, accumulator acc rescaled when
// the max grows), so a task reads each K/V block once for all its queries
// while it is in cache instead of scoring all n keys first. Scores come from
// scores_blocked over K laid out in blocks of kKeyBlock keys (no horizontal
// sums) where the kernels have it, else from scores over K rows; the weighted
// V sums from accum over all the block's queries at once (V rows read once
// per group of queries).
constexpr int64_t kQueryBlock = 64;  // queries per task (a multiple of 8: accum's widest group)
constexpr int64_t kKeyFold = 256;    // keys scored per fold (scores of a task: kQueryBlock * kKeyFold floats)

struct AttnShape {
  int64_t n, d, heads, dh;
};

// K of head h as blocks of kKeyBlock keys ([block][dh][kKeyBlock], ops.h
// scores_blocked) and V of head h as contiguous rows [n][dh], from the [n, d]
// projections; kb holds heads * blocks * kKeyBlock * dh floats, vh n * d.
void lay_out_kv(const AttnShape& a, const float* k, const float* v, float* kb, float* vh) {
  const int64_t blocks = (a.n + kernels::kKeyBlock - 1) / kernels::kKeyBlock;
  thread_pool().parallel_for(a.heads * blocks, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / blocks, b = t % blocks, i0 = b * kernels::kKeyBlock;
      const int64_t m = std::min<int64_t>(kernels::kKeyBlock, a.n - i0);
      float* dst = kb + (h * blocks + b) * kernels::kKeyBlock * a.dh;
      for (int64_t l = 0; l < m; ++l) {
        const float* src = k + (i0 + l) * a.d + h * a.dh;
        for (int64_t e = 0; e < a.dh; ++e) dst[e * kernels::kKeyBlock + l] = src[e];
        std::copy_n(v + (i0 + l) * a.d + h * a.dh, a.dh, vh + (h * a.n + i0 + l) * a.dh);
      }
    }
  });
}

// out[i, h*dh..] = softmax(q_i k^T / sqrt(dh)) v for queries [i0, i0 + g) of head h.
void attend_block(const AttnShape& a, const kernels::AttendKernels& ak, const float* q, const float* k,
                  const float* kb, const float* vh, int64_t h, int64_t i0, int64_t g, float* out) {
  thread_local std::vector<float> qb, s, acc, mx, sum;
  qb.resize(static_cast<size_t>(kQueryBlock * a.dh));
  s.resize(static_cast<size_t>(kQueryBlock * kKeyFold));
  acc.assign(static_cast<size_t>(kQueryBlock * a.dh), 0.0f);
  mx.assign(static_cast<size_t>(kQueryBlock), -std::numeric_limits<float>::infinity());
  sum.assign(static_cast<size_t>(kQueryBlock), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(a.dh));
  const int gi = static_cast<int>(g), dh = static_cast<int>(a.dh);
  for (int64_t j = 0; j < g; ++j) std::copy_n(q + (i0 + j) * a.d + h * a.dh, a.dh, qb.data() + j * a.dh);
  const int64_t blocks = (a.n + kernels::kKeyBlock - 1) / kernels::kKeyBlock;
  const float* kh = kb + h * blocks * kernels::kKeyBlock * a.dh;
  const float* vhh = vh + h * a.n * a.dh;
  for (int64_t k0 = 0; k0 < a.n; k0 += kKeyFold) {
    const int64_t nb = std::min(kKeyFold, a.n - k0);
    if (ak.scores_blocked) {  // k0 is a multiple of kKeyBlock: the fold starts a block
      ak.scores_blocked(qb.data(), gi, dh, reinterpret_cast<const uint8_t*>(kh + k0 * a.dh), 0, nb, scale, s.data(),
                        kKeyFold);
    } else {
      ak.scores(qb.data(), gi, dh, reinterpret_cast<const uint8_t*>(k + k0 * a.d + h * a.dh),
                a.d * static_cast<int64_t>(sizeof(float)), nb, scale, s.data(), kKeyFold);
    }
    for (int64_t j = 0; j < g; ++j) {
      float* sj = s.data() + j * kKeyFold;
      const float m_new = std::max(mx[j], ak.max(sj, nb));
      const float part = ak.exp_sum(sj, nb, m_new);
      const float f = std::exp(mx[j] - m_new);  // 0 on the first fold (m was -inf)
      if (f != 1.0f) kernels::scale(acc.data() + j * a.dh, f, a.dh);
      sum[j] = sum[j] * f + part;
      mx[j] = m_new;
    }
    ak.accum(s.data(), kKeyFold, gi, reinterpret_cast<const uint8_t*>(vhh + k0 * a.dh),
             a.dh * static_cast<int64_t>(sizeof(float)), nb, dh, acc.data());
  }
  for (int64_t j = 0; j < g; ++j) {
    const float inv = 1.0f / sum[j];
    float* o = out + (i0 + j) * a.d + h * a.dh;
    for (int64_t e = 0; e < a.dh; ++e) o[e] = acc[j * a.dh + e] * inv;
  }
}

void attention(const AttnShape& a, const float* q, const float* k, const float* v, float* kb, float* vh,
               float* out) {
  const kernels::AttendKernels& ak = kernels::attend_kernels(DType::F32);
  lay_out_kv(a, k, v, kb, vh);  // (K's blocks go unused by a table without scores_blocked)
  const int64_t qblocks = (a.n + kQueryBlock - 1) / kQueryBlock;
  thread_pool().parallel_for(a.heads * qblocks, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / qblocks, i0 = (t % qblocks) * kQueryBlock;
      attend_block(a, ak, q, k, kb, vh, h, i0, std::min(kQueryBlock, a.n - i0), out);
    }
  });
}

}  // namespace

void VisionTower::layer(const VisionLayerWeights& l, Scratch& s, VisionTowerTimes* times) const {
  const int64_t n = c_.n_patches(), d = c_.hidden, ff = c_.intermediate;
  PhaseClock clock(times);
  for (int64_t i = 0; i < n; ++i)
    kernels::layer_norm(s.x.data() + i * d, l.ln1_w.data(), l.ln1_b.data(), c_.layer_norm_eps, d, s.h.data() + i * d);
  linear(l.wq, l.bq, s.h.data(), n, s.q.data());
  linear(l.wk, l.bk, s.h.data(), n, s.k.data());
  linear(l.wv, l.bv, s.h.data(), n, s.v.data());
  clock.lap(&VisionTowerTimes::attn_proj);
  attention({n, d, c_.n_heads, c_.head_dim()}, s.q.data(), s.k.data(), s.v.data(), s.kb.data(), s.vh.data(),
            s.a.data());
  clock.lap(&VisionTowerTimes::attn_core);
  linear(l.wo, l.bo, s.a.data(), n, s.h.data());
  kernels::add(s.x.data(), s.h.data(), n * d);
  clock.lap(&VisionTowerTimes::attn_proj);
  for (int64_t i = 0; i < n; ++i)
    kernels::layer_norm(s.x.data() + i * d, l.ln2_w.data(), l.ln2_b.data(), c_.layer_norm_eps, d, s.h.data() + i * d);
  linear(l.fc1, l.b1, s.h.data(), n, s.u.data());
  // An ungated GELU-tanh: the gated kernel with a gate of ones (x * 1 is exact).
  for (int64_t i = 0; i < n; ++i) kernels::gelu_tanh_mul(s.u.data() + i * ff, s.ones.data(), ff);
  linear(l.fc2, l.b2, s.u.data(), n, s.h.data());
  kernels::add(s.x.data(), s.h.data(), n * d);
  clock.lap(&VisionTowerTimes::mlp);
}

std::vector<float> VisionTower::encode_patches(std::span<const float> pixels, VisionTowerTimes* times) const {
  PhaseClock clock(times);
  const int64_t side = c_.image_size, p = c_.patch_size, g = c_.patches_per_side(), n = c_.n_patches();
  const int64_t d = c_.hidden, pp = 3 * p * p;
  OG_CHECK(static_cast<int64_t>(pixels.size()) == 3 * side * side, "vision tower: expected ", side, "x", side,
           " RGB pixels (", 3 * side * side, " values), got ", pixels.size(), " values");
  // The patch conv (kernel = stride = p) is a matmul over unfolded patches,
  // each patch's values in the conv weight's order: channel, row, column.
  std::vector<float> unfolded(static_cast<size_t>(n * pp));
  for (int64_t py = 0; py < g; ++py)
    for (int64_t px = 0; px < g; ++px)
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t y = 0; y < p; ++y)
          std::copy_n(pixels.data() + (ch * side + py * p + y) * side + px * p, p,
                      unfolded.data() + (py * g + px) * pp + (ch * p + y) * p);
  std::lock_guard<std::mutex> lock(scratch_->mu);
  if (!scratch_->s) scratch_->s = std::make_unique<Scratch>(c_);
  Scratch& s = *scratch_->s;
  std::vector<float>& x = s.x;
  linear(w_.patch, w_.patch_b, unfolded.data(), n, x.data());
  kernels::add(x.data(), w_.pos.data(), n * d);
  clock.lap(&VisionTowerTimes::patch_embed);
  for (const VisionLayerWeights& l : w_.layers) layer(l, s, times);
  clock = PhaseClock(times);
  for (int64_t i = 0; i < n; ++i)
    kernels::layer_norm(x.data() + i * d, w_.post_w.data(), w_.post_b.data(), c_.layer_norm_eps, d, x.data() + i * d);
  std::vector<float> out(x);
  clock.lap(&VisionTowerTimes::project);
  return out;
}

std::vector<float> VisionTower::project(std::span<const float> patches) const {
  const int64_t g = c_.patches_per_side(), d = c_.hidden, t = c_.tokens_per_side(), k = g / t;
  OG_CHECK(static_cast<int64_t>(patches.size()) == c_.n_patches() * d, "vision tower: the projector expects ",
           c_.n_patches(), " patch rows of ", d);
  // k x k average pooling of the patch grid (row-major patches) to t x t tokens.
  std::vector<float> pooled(static_cast<size_t>(t * t * d), 0.0f);
  for (int64_t ty = 0; ty < t; ++ty)
    for (int64_t tx = 0; tx < t; ++tx) {
      float* y = pooled.data() + (ty * t + tx) * d;
      for (int64_t dy = 0; dy < k; ++dy)
        for (int64_t dx = 0; dx < k; ++dx) kernels::add(y, patches.data() + ((ty * k + dy) * g + tx * k + dx) * d, d);
      kernels::scale(y, 1.0f / static_cast<float>(k * k), d);
      kernels::rms_norm(y, w_.soft_norm.data(), c_.layer_norm_eps, d, y);
    }
  TensorView proj;
  proj.data = w_.proj.data();
  proj.dtype = DType::F32;
  proj.shape = {c_.text_hidden, d};
  proj.name = "multi_modal_projector.mm_input_projection_weight";
  std::vector<float> out(static_cast<size_t>(t * t * c_.text_hidden));
  kernels::matmul(proj, pooled.data(), t * t, out.data());
  return out;
}

std::vector<float> VisionTower::encode(std::span<const float> pixels, VisionTowerTimes* times) const {
  const std::vector<float> patches = encode_patches(pixels, times);
  PhaseClock clock(times);
  std::vector<float> out = project(patches);
  clock.lap(&VisionTowerTimes::project);
  return out;
}

}  // namespace og
