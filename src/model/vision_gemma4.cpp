// Gemma 4's vision encoder and embedder (vision_gemma4.h). Matmuls through
// kernels::matmul, attention through the f32 attend kernels (vision_parts),
// norms and RoPE through the kernel table's row functions.
// tests/model/vision_gemma4_test.cpp holds it to a plain twin in double.
#include "model/vision_gemma4.h"

#include <cmath>
#include <functional>

#include "base/error.h"
#include "format/hf_config.h"
#include "kernels/ops.h"

namespace og {

using vision_parts::Clamp;

namespace {

int64_t need_int(const nlohmann::json& obj, const char* key, const std::string& file) {
  const std::optional<int64_t> v = json_int(obj, key, file);
  OG_CHECK(v.has_value(), file, ": vision_config.", key, " is missing (needed for Gemma 4's vision tower)");
  return *v;
}

// A layer's tensors by the HF tails of their module names (the part after
// encoder.layers.N.); `linear` marks the clippable linears.
struct Part {
  const char* hf;
  const char* gguf;
  bool linear;
};
constexpr Part kParts[] = {
    {"input_layernorm", "ln1", false},
    {"post_attention_layernorm", "attn_post_norm", false},
    {"pre_feedforward_layernorm", "ln2", false},
    {"post_feedforward_layernorm", "ffn_post_norm", false},
    {"self_attn.q_norm", "attn_q_norm", false},
    {"self_attn.k_norm", "attn_k_norm", false},
    {"self_attn.q_proj", "attn_q", true},
    {"self_attn.k_proj", "attn_k", true},
    {"self_attn.v_proj", "attn_v", true},
    {"self_attn.o_proj", "attn_out", true},
    {"mlp.gate_proj", "ffn_gate", true},
    {"mlp.up_proj", "ffn_up", true},
    {"mlp.down_proj", "ffn_down", true},
};

// Where the tensors are in one file layout.
struct Names {
  std::string patch, pos, std_bias, std_scale, proj_base;
  bool patch_channel_first = false;
  std::function<std::string(int64_t, const Part&)> base;  // a layer tensor's name without .weight
  std::string linear_infix;                               // ".linear" in HF (Gemma4ClippableLinear.linear)
  bool read_clamps = false;
};

Clamp read_clamp(const TensorSource& src, const std::string& base, bool read) {
  Clamp c;
  if (!read) return c;
  if (auto v = vision_parts::scalar(src, base + ".input_min")) c.in_min = *v;
  if (auto v = vision_parts::scalar(src, base + ".input_max")) c.in_max = *v;
  if (auto v = vision_parts::scalar(src, base + ".output_min")) c.out_min = *v;
  if (auto v = vision_parts::scalar(src, base + ".output_max")) c.out_max = *v;
  return c;
}

Gemma4VisionWeights bind(const Gemma4VisionConfig& c, const TensorSource& src, const Names& n) {
  c.check();
  using vision_parts::f32;
  using vision_parts::matrix;
  const int64_t d = c.hidden, dh = c.head_dim, p = c.patch_size, ff = c.intermediate;
  Gemma4VisionWeights w;
  const std::vector<int64_t> patch_shape =
      n.patch_channel_first ? std::vector<int64_t>{d, 3, p, p} : std::vector<int64_t>{d, 3 * p * p};
  w.patch = tensor_view(src, vision_parts::require(src, n.patch, patch_shape));
  OG_CHECK(kernels::weight_dtype_supported(w.patch.dtype), src.source_name(), ": vision tensor ", n.patch,
           " has a dtype without matmul kernels");
  w.patch.shape = {d, 3 * p * p};
  w.patch_channel_first = n.patch_channel_first;
  w.pos = f32(src, n.pos, {2, c.position_table, d});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    Gemma4VisionLayer L;
    auto vec = [&](int i, int64_t size) { return f32(src, n.base(l, kParts[i]) + ".weight", {size}); };
    auto mat = [&](int i, int64_t rows, int64_t cols, Clamp& clamp) {
      const std::string base = n.base(l, kParts[i]);
      clamp = read_clamp(src, base, n.read_clamps);
      return matrix(src, base + n.linear_infix + ".weight", rows, cols);
    };
    L.ln_in = vec(0, d);
    L.ln_post_attn = vec(1, d);
    L.ln_pre_ff = vec(2, d);
    L.ln_post_ff = vec(3, d);
    L.q_norm = vec(4, dh);
    L.k_norm = vec(5, dh);
    L.wq = mat(6, c.n_heads * dh, d, L.cq);
    L.wk = mat(7, c.n_kv_heads * dh, d, L.ck);
    L.wv = mat(8, c.n_kv_heads * dh, d, L.cv);
    L.wo = mat(9, d, c.n_heads * dh, L.co);
    L.gate = mat(10, ff, d, L.cgate);
    L.up = mat(11, ff, d, L.cup);
    L.down = mat(12, d, ff, L.cdown);
    w.layers.push_back(std::move(L));
  }
  if (c.standardize) {
    w.std_bias = f32(src, n.std_bias, {d});
    w.std_scale = f32(src, n.std_scale, {d});
  }
  w.proj = matrix(src, n.proj_base + ".weight", c.text_hidden, d);
  w.cproj = read_clamp(src, n.proj_base, n.read_clamps);
  return w;
}

}  // namespace

void Gemma4VisionConfig::check() const {
  OG_CHECK(hidden > 0 && intermediate > 0 && n_layers > 0 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 &&
               patch_size > 0 && pooling > 0 && position_table > 0 && text_hidden > 0 && max_soft_tokens > 0,
           "gemma4 vision: hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, "
           "num_key_value_heads, head_dim, patch_size, pooling_kernel_size, position_embedding_size, "
           "max_soft_tokens and the text hidden_size must be positive");
  OG_CHECK(n_heads % n_kv_heads == 0, "gemma4 vision: num_key_value_heads ", n_kv_heads,
           " does not divide num_attention_heads ", n_heads);
  OG_CHECK(head_dim % 4 == 0, "gemma4 vision: head_dim ", head_dim,
           " is not a multiple of 4 (two spatial halves of rotary pairs)");
  OG_CHECK(rms_norm_eps > 0 && rope_theta > 0, "gemma4 vision: rms_norm_eps and rope_theta must be positive");
}

Gemma4VisionConfig gemma4_vision_config(const nlohmann::json& config, const std::string& file) {
  OG_CHECK(config.contains("vision_config") && config["vision_config"].is_object(), file,
           ": vision_config is missing (the model has no vision tower)");
  const nlohmann::json& v = config["vision_config"];
  Gemma4VisionConfig c;
  c.hidden = need_int(v, "hidden_size", file);
  c.intermediate = need_int(v, "intermediate_size", file);
  c.n_layers = need_int(v, "num_hidden_layers", file);
  c.n_heads = need_int(v, "num_attention_heads", file);
  c.n_kv_heads = json_int(v, "num_key_value_heads", file).value_or(c.n_heads);
  c.head_dim = json_int(v, "head_dim", file).value_or(c.n_heads > 0 ? c.hidden / c.n_heads : 0);
  c.patch_size = json_int(v, "patch_size", file).value_or(c.patch_size);
  c.pooling = json_int(v, "pooling_kernel_size", file).value_or(c.pooling);
  c.position_table = json_int(v, "position_embedding_size", file).value_or(c.position_table);
  if (const auto eps = json_number(v, "rms_norm_eps", file)) c.rms_norm_eps = static_cast<float>(*eps);
  if (v.contains("rope_parameters") && v["rope_parameters"].is_object())
    if (const auto t = json_number(v["rope_parameters"], "rope_theta", file)) c.rope_theta = static_cast<float>(*t);
  c.standardize = json_bool(v, "standardize", file).value_or(false);
  c.clipped_linears = json_bool(v, "use_clipped_linears", file).value_or(false);
  const std::string act = json_string(v, "hidden_activation", file).value_or("gelu_pytorch_tanh");
  OG_CHECK(act == "gelu_pytorch_tanh", file, ": vision_config.hidden_activation is \"", act,
           "\"; only gelu_pytorch_tanh is supported");
  OG_CHECK(config.contains("text_config") && config["text_config"].is_object(), file, ": text_config is missing");
  const std::optional<int64_t> th = json_int(config["text_config"], "hidden_size", file);
  OG_CHECK(th.has_value(), file, ": text_config.hidden_size is missing");
  c.text_hidden = *th;
  c.check();
  return c;
}

Gemma4VisionConfig gemma4_mmproj_config(const GgufFile& f) {
  const std::string file = f.source_name();
  auto need = [&](const char* key) {
    const std::optional<int64_t> v = f.get_int(key);
    OG_CHECK(v.has_value(), file, ": ", key, " is missing (needed for the vision tower)");
    return *v;
  };
  Gemma4VisionConfig c;
  c.patch_size = need("clip.vision.patch_size");
  c.hidden = need("clip.vision.embedding_length");
  c.intermediate = need("clip.vision.feed_forward_length");
  c.n_layers = need("clip.vision.block_count");
  c.n_heads = need("clip.vision.attention.head_count");
  c.text_hidden = need("clip.vision.projection_dim");
  if (const auto eps = f.get_float("clip.vision.attention.layer_norm_epsilon"))
    c.rms_norm_eps = static_cast<float>(*eps);
  c.pooling = f.get_int("clip.vision.projector.scale_factor").value_or(3);
  // The widths llama.cpp's file does not state come from the weights' shapes.
  const TensorInfo* q = f.find("v.blk.0.attn_q.weight");
  const TensorInfo* k = f.find("v.blk.0.attn_k.weight");
  OG_CHECK(q != nullptr && k != nullptr && q->shape.size() == 2 && k->shape.size() == 2, file,
           ": vision tensors v.blk.0.attn_q.weight and v.blk.0.attn_k.weight (2-D) are needed");
  OG_CHECK(c.n_heads > 0 && q->shape[0] % c.n_heads == 0, file, ": v.blk.0.attn_q.weight's ", q->shape[0],
           " rows do not split into ", c.n_heads, " heads");
  c.head_dim = q->shape[0] / c.n_heads;
  OG_CHECK(c.head_dim > 0 && k->shape[0] % c.head_dim == 0, file, ": v.blk.0.attn_k.weight's ", k->shape[0],
           " rows are not whole heads of ", c.head_dim);
  c.n_kv_heads = k->shape[0] / c.head_dim;
  if (const auto kv = f.get_int("clip.vision.attention.head_count_kv"); kv.has_value())
    OG_CHECK(*kv == c.n_kv_heads, file, ": clip.vision.attention.head_count_kv is ", *kv,
             " but v.blk.0.attn_k.weight's rows make ", c.n_kv_heads, " heads of ", c.head_dim);
  const TensorInfo* pos = f.find("v.position_embd.weight");
  OG_CHECK(pos != nullptr && pos->shape.size() == 3 && pos->shape[0] == 2, file,
           ": vision tensor v.position_embd.weight [2, positions, hidden] is missing");
  c.position_table = pos->shape[1];
  c.standardize = f.find("v.std_bias") != nullptr;
  c.check();
  return c;
}

std::string gemma4_vision_prefix(const TensorSource& src) {
  for (const char* p : {"model.", ""})
    if (src.find(std::string(p) + "vision_tower.patch_embedder.input_proj.weight")) return p;
  throw Error(src.source_name() +
              ": vision tensor model.vision_tower.patch_embedder.input_proj.weight is missing "
              "(not a Gemma 4 checkpoint with a vision tower)");
}

Gemma4VisionWeights bind_gemma4_vision(const Gemma4VisionConfig& c, const TensorSource& src) {
  const std::string top = gemma4_vision_prefix(src);
  const std::string vt = top + "vision_tower.";
  Names n;
  n.patch = vt + "patch_embedder.input_proj.weight";
  n.pos = vt + "patch_embedder.position_embedding_table";
  n.std_bias = vt + "std_bias";
  n.std_scale = vt + "std_scale";
  n.proj_base = top + "embed_vision.embedding_projection";
  n.base = [&](int64_t l, const Part& p) { return vt + "encoder.layers." + std::to_string(l) + "." + p.hf; };
  n.linear_infix = ".linear";  // only the linears: Gemma4ClippableLinear wraps an nn.Linear named linear
  n.read_clamps = c.clipped_linears;
  return bind(c, src, n);
}

Gemma4VisionWeights bind_gemma4_mmproj(const Gemma4VisionConfig& c, const TensorSource& src) {
  Names n;
  n.patch = "v.patch_embd.weight";
  n.patch_channel_first = true;  // the converter stores the patch weight as a conv: [hidden, 3, p, p]
  n.pos = "v.position_embd.weight";
  n.std_bias = "v.std_bias";
  n.std_scale = "v.std_scale";
  n.proj_base = "mm.input_projection";
  n.base = [](int64_t l, const Part& p) { return "v.blk." + std::to_string(l) + "." + p.gguf; };
  n.read_clamps = true;  // llama.cpp clamps wherever the file holds bounds
  return bind(c, src, n);
}

std::pair<int64_t, int64_t> gemma4_image_size(const Gemma4VisionConfig& c, int64_t height, int64_t width) {
  OG_CHECK(height > 0 && width > 0, "gemma4 vision: an image of ", width, "x", height, " pixels has no patches");
  const int64_t p = c.patch_size, k = c.pooling, side = k * p, max_patches = c.max_patches();
  const double target_px = static_cast<double>(max_patches * p * p);
  const double factor = std::sqrt(target_px / (static_cast<double>(height) * static_cast<double>(width)));
  int64_t th = static_cast<int64_t>(std::floor(factor * static_cast<double>(height) / static_cast<double>(side))) * side;
  int64_t tw = static_cast<int64_t>(std::floor(factor * static_cast<double>(width) / static_cast<double>(side))) * side;
  OG_CHECK(th > 0 || tw > 0, "gemma4 vision: a ", width, "x", height, " image resizes to 0x0");
  const int64_t max_side = (max_patches / (k * k)) * side;
  if (th == 0) {
    th = side;
    tw = std::min(static_cast<int64_t>(std::floor(static_cast<double>(width) / static_cast<double>(height))) * side,
                  max_side);
  } else if (tw == 0) {
    tw = side;
    th = std::min(static_cast<int64_t>(std::floor(static_cast<double>(height) / static_cast<double>(width))) * side,
                  max_side);
  }
  OG_CHECK(static_cast<double>(th * tw) <= target_px, "gemma4 vision: a ", width, "x", height, " image resizes to ",
           tw, "x", th, ", more than ", max_patches, " patches");
  return {th, tw};
}

Gemma4VisionTower::Gemma4VisionTower(Gemma4VisionConfig c, Gemma4VisionWeights w) : c_(c), w_(std::move(w)) {
  c_.check();
  OG_CHECK(static_cast<int64_t>(w_.layers.size()) == c_.n_layers, "gemma4 vision: ", w_.layers.size(),
           " layers bound, the config says ", c_.n_layers);
  // One spatial half of a head (head_dim / 2 values) rotates as a rotate-half
  // RoPE of its own: frequencies theta^(-2j / (head_dim / 2)).
  const int64_t m = c_.head_dim / 2;
  inv_freq_.resize(static_cast<size_t>(m / 2));
  for (int64_t j = 0; j < m / 2; ++j)
    inv_freq_[j] = 1.0f / std::pow(c_.rope_theta, static_cast<float>(2 * j) / static_cast<float>(m));
}

int64_t Gemma4VisionTower::tokens_for(int64_t height, int64_t width) const {
  const int64_t s = c_.patch_size * c_.pooling;
  return (height / s) * (width / s);
}

void Gemma4VisionTower::layer(const Gemma4VisionLayer& l, std::vector<float>& x, int64_t gh, int64_t gw) const {
  const int64_t n = gh * gw, d = c_.hidden, dh = c_.head_dim, m = dh / 2, ff = c_.intermediate;
  const int64_t nq = c_.n_heads * dh, nkv = c_.n_kv_heads * dh;
  const float eps = c_.rms_norm_eps;
  std::vector<float> h(x.size()), q(static_cast<size_t>(n * nq)), k(static_cast<size_t>(n * nkv)),
      v(static_cast<size_t>(n * nkv)), a(static_cast<size_t>(n * nq));
  for (int64_t i = 0; i < n; ++i) kernels::rms_norm(x.data() + i * d, l.ln_in.data(), eps, d, h.data() + i * d);
  vision_parts::clamped_linear(l.wq, l.cq, h.data(), n, q.data());
  vision_parts::clamped_linear(l.wk, l.ck, h.data(), n, k.data());
  vision_parts::clamped_linear(l.wv, l.cv, h.data(), n, v.data());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t px = i % gw, py = i / gw;
    auto norm_rope = [&](float* head, const std::vector<float>& w) {
      kernels::rms_norm(head, w.data(), eps, dh, head);
      kernels::rope(head, m, m, px, inv_freq_.data(), false);      // first half: the column
      kernels::rope(head + m, m, m, py, inv_freq_.data(), false);  // second half: the row
    };
    for (int64_t hd = 0; hd < c_.n_heads; ++hd) norm_rope(q.data() + i * nq + hd * dh, l.q_norm);
    for (int64_t hd = 0; hd < c_.n_kv_heads; ++hd) {
      norm_rope(k.data() + i * nkv + hd * dh, l.k_norm);
      float* vh = v.data() + i * nkv + hd * dh;
      kernels::rms_norm(vh, nullptr, eps, dh, vh);  // v's norm has no weight
    }
  }
  vision_parts::AttendShape s;
  s.n = n;
  s.n_heads = c_.n_heads;
  s.n_kv_heads = c_.n_kv_heads;
  s.head_dim = dh;
  s.q_stride = nq;
  s.kv_stride = nkv;
  s.scale = 1.0f;  // the q / k norms stand in for 1/sqrt(head_dim)
  vision_parts::attend_all(s, q.data(), k.data(), v.data(), a.data());
  vision_parts::clamped_linear(l.wo, l.co, a.data(), n, h.data());
  for (int64_t i = 0; i < n; ++i) {
    kernels::rms_norm(h.data() + i * d, l.ln_post_attn.data(), eps, d, h.data() + i * d);
    kernels::add(x.data() + i * d, h.data() + i * d, d);
  }
  for (int64_t i = 0; i < n; ++i) kernels::rms_norm(x.data() + i * d, l.ln_pre_ff.data(), eps, d, h.data() + i * d);
  std::vector<float> g(static_cast<size_t>(n * ff)), u(static_cast<size_t>(n * ff));
  vision_parts::clamped_linear(l.gate, l.cgate, h.data(), n, g.data());
  vision_parts::clamped_linear(l.up, l.cup, h.data(), n, u.data());
  for (int64_t i = 0; i < n; ++i) kernels::gelu_tanh_mul(g.data() + i * ff, u.data() + i * ff, ff);
  vision_parts::clamped_linear(l.down, l.cdown, g.data(), n, h.data());
  for (int64_t i = 0; i < n; ++i) {
    kernels::rms_norm(h.data() + i * d, l.ln_post_ff.data(), eps, d, h.data() + i * d);
    kernels::add(x.data() + i * d, h.data() + i * d, d);
  }
}

std::vector<float> Gemma4VisionTower::encode_patches(std::span<const float> pixels, int64_t height,
                                                     int64_t width) const {
  const int64_t p = c_.patch_size, s = p * c_.pooling, d = c_.hidden, pp = 3 * p * p;
  OG_CHECK(height > 0 && width > 0 && height % s == 0 && width % s == 0, "gemma4 vision: the input is ", width, "x",
           height, " pixels; both sides must be positive multiples of ", s, " (patch ", p, " x pooling ",
           c_.pooling, ")");
  OG_CHECK(static_cast<int64_t>(pixels.size()) == 3 * height * width, "gemma4 vision: expected ", width, "x",
           height, " RGB pixels (", 3 * height * width, " values), got ", pixels.size(), " values");
  const int64_t gh = height / p, gw = width / p, n = gh * gw;
  OG_CHECK(n <= c_.max_patches(), "gemma4 vision: ", n, " patches is more than the ", c_.max_patches(),
           " of max_soft_tokens ", c_.max_soft_tokens);
  OG_CHECK(gh <= c_.position_table && gw <= c_.position_table, "gemma4 vision: a ", gw, "x", gh,
           " patch grid is wider than the ", c_.position_table, " position table rows");
  std::vector<float> unfolded(static_cast<size_t>(n * pp));
  for (int64_t py = 0; py < gh; ++py)
    for (int64_t px = 0; px < gw; ++px) {
      float* row = unfolded.data() + (py * gw + px) * pp;
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t y = 0; y < p; ++y)
          for (int64_t xx = 0; xx < p; ++xx) {
            const float val = pixels[(ch * height + py * p + y) * width + px * p + xx];
            // HF's patches are (row, column, channel); the mmproj's conv weight is (channel, row, column).
            row[w_.patch_channel_first ? (ch * p + y) * p + xx : (y * p + xx) * 3 + ch] = val;
          }
    }
  std::vector<float> x(static_cast<size_t>(n * d));
  kernels::matmul(w_.patch, unfolded.data(), n, x.data());
  std::vector<float> pe(static_cast<size_t>(d));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t px = i % gw, py = i / gw;
    std::copy_n(w_.pos.data() + px * d, d, pe.data());
    kernels::add(pe.data(), w_.pos.data() + (c_.position_table + py) * d, d);
    kernels::add(x.data() + i * d, pe.data(), d);
  }
  for (const Gemma4VisionLayer& l : w_.layers) layer(l, x, gh, gw);
  return x;
}

std::vector<float> Gemma4VisionTower::encode(std::span<const float> pixels, int64_t height, int64_t width) const {
  const std::vector<float> x = encode_patches(pixels, height, width);
  const int64_t p = c_.patch_size, k = c_.pooling, d = c_.hidden, gw = width / p;
  const int64_t tw = gw / k, th = height / p / k, t = th * tw;
  // k x k average pooling of the row-major patch grid to row-major tokens, scaled by sqrt(hidden).
  std::vector<float> pooled(static_cast<size_t>(t * d), 0.0f);
  const float scale = std::sqrt(static_cast<float>(d)) / static_cast<float>(k * k);
  for (int64_t ty = 0; ty < th; ++ty)
    for (int64_t tx = 0; tx < tw; ++tx) {
      float* y = pooled.data() + (ty * tw + tx) * d;
      for (int64_t dy = 0; dy < k; ++dy)
        for (int64_t dx = 0; dx < k; ++dx) kernels::add(y, x.data() + ((ty * k + dy) * gw + tx * k + dx) * d, d);
      kernels::scale(y, scale, d);
      if (c_.standardize)
        for (int64_t e = 0; e < d; ++e) y[e] = (y[e] - w_.std_bias[e]) * w_.std_scale[e];
      kernels::rms_norm(y, nullptr, c_.rms_norm_eps, d, y);  // the embedder's pre-projection norm
    }
  std::vector<float> out(static_cast<size_t>(t * c_.text_hidden));
  vision_parts::clamped_linear(w_.proj, w_.cproj, pooled.data(), t, out.data());
  return out;
}

}  // namespace og
