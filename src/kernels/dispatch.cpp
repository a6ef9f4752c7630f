// The public kernel API (ops.h): argument checks, the choice of instruction
// set at run time (OFFGRAPH_ISA=scalar|avx2|avxvnni|avx512 on x86-64,
// scalar|neon|dotprod|i8mm on AArch64 overrides it for every kernel,
// attention over the cache included), and the threaded matmul driver.
// The only file that knows which ISAs exist; whether the CPU has one, and
// which kernels its table holds, is the architecture's file (kernels/arch.h).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/arch.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/ref/ref.h"

namespace og::kernels {

namespace {

constexpr DType kWeightDTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                                   DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                   DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q4_K_R,
                                   DType::Q8_0_R, DType::Q6_K_R, DType::Q5_K_R, DType::Q4_0_R,
                                   DType::Q4_K_R16, DType::Q6_K_R16, DType::Q2_K, DType::Q3_K,
                                   DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::IQ4_NL_R,
                                   DType::MXFP4_R};

constexpr DType kAttendDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0};

constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2,  Isa::kAvxVnni, Isa::kAvx512,
                            Isa::kNeon,   Isa::kDotprod, Isa::kI8mm};
static_assert(std::size(kAllIsas) == kNumIsas);

int id_of(DType t) { return static_cast<int>(t); }

// A reference MatmulImpl per dtype (the dtype is a template argument because
// the table holds plain function pointers).
template <DType T>
void ref_rows(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
              const void*, int64_t n_x, float* y, int64_t n_out) {
  ref::matmul_rows(T, w, row_bytes, n_in, r0, r1, x, n_x, y, n_out);
}

template <DType T>
void set_ref_matmul(KernelTable& k) {
  k.matmul[id_of(T)].rows = &ref_rows<T>;
}

KernelTable make_ref_table() {
  KernelTable k;
  k.isa = Isa::kScalar;
  set_ref_matmul<DType::F32>(k);
  set_ref_matmul<DType::F16>(k);
  set_ref_matmul<DType::BF16>(k);
  set_ref_matmul<DType::Q8_0>(k);
  set_ref_matmul<DType::Q4_0>(k);
  set_ref_matmul<DType::Q4_1>(k);
  set_ref_matmul<DType::Q5_0>(k);
  set_ref_matmul<DType::Q5_1>(k);
  set_ref_matmul<DType::Q4_K>(k);
  set_ref_matmul<DType::Q5_K>(k);
  set_ref_matmul<DType::Q6_K>(k);
  set_ref_matmul<DType::Q4_K_R>(k);
  set_ref_matmul<DType::Q8_0_R>(k);
  set_ref_matmul<DType::Q6_K_R>(k);
  set_ref_matmul<DType::Q5_K_R>(k);
  set_ref_matmul<DType::Q4_0_R>(k);
  set_ref_matmul<DType::Q4_K_R16>(k);
  set_ref_matmul<DType::Q6_K_R16>(k);
  set_ref_matmul<DType::Q2_K>(k);
  set_ref_matmul<DType::Q3_K>(k);
  set_ref_matmul<DType::IQ4_NL>(k);
  set_ref_matmul<DType::IQ4_XS>(k);
  set_ref_matmul<DType::MXFP4>(k);
  set_ref_matmul<DType::IQ4_NL_R>(k);
  set_ref_matmul<DType::MXFP4_R>(k);
  k.rms_norm = &ref::rms_norm;
  k.softmax = &ref::softmax;
  k.silu_mul = &ref::silu_mul;
  k.gelu_tanh_mul = &ref::gelu_tanh_mul;
  k.add = &ref::add;
  k.scale = &ref::scale;
  k.f32_to_f16_row = &ref::f32_to_f16_row;
  for (DType t : kAttendDTypes) k.attend[id_of(t)] = *ref::attend_kernels(t);
  return k;
}

KernelTable make_table(Isa isa) {
  KernelTable k = make_ref_table();
  k.isa = isa;
  if (isa != Isa::kScalar) arch::register_kernels(isa, k);
  return k;
}

Isa best_isa() {
  Isa best = Isa::kScalar;
  for (Isa isa : arch::isas())
    if (isa_available(isa)) best = isa;
  return best;
}

Isa chosen_isa() {
  const char* env = std::getenv("OFFGRAPH_ISA");
  if (!env || !*env) return best_isa();
  std::string v = env;
  for (Isa isa : kAllIsas)
    if (v == isa_str(isa)) {
      OG_CHECK(isa_available(isa), "OFFGRAPH_ISA=", v, ": this CPU does not support ", v);
      return isa;
    }
  fail("OFFGRAPH_ISA=", v, ": unknown instruction set (expected ", arch::isa_names(), ")");
}

void check_weight_dtype(DType t, const char* what) {
  OG_CHECK(weight_dtype_supported(t), what, ": no kernels for dtype ", dtype_name(static_cast<uint32_t>(t)));
}

void check_row(DType t, int64_t n, const char* what) {
  check_weight_dtype(t, what);
  OG_CHECK(!ref::is_interleaved(t), what, ": rows of ", dtype_info(t).name,
           " are interleaved in groups (get_row reads one)");
  int64_t block = dtype_info(t).block;
  OG_CHECK(n >= 0 && n % block == 0, what, ": a row of ", n, " elements is not a whole number of ",
           dtype_info(t).name, " blocks of ", block);
}

// 64-byte aligned scratch, one per calling thread.
struct alignas(64) Line {
  uint8_t b[64];
};

}  // namespace

const char* isa_str(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avxvnni";
    case Isa::kNeon: return "neon";
    case Isa::kDotprod: return "dotprod";
    case Isa::kI8mm: return "i8mm";
    default: return "scalar";
  }
}

bool isa_available(Isa isa) { return isa == Isa::kScalar || arch::available(isa); }

const KernelTable& kernel_table(Isa isa) {
  OG_CHECK(isa_available(isa), "instruction set ", isa_str(isa), " is not supported by this CPU");
  static std::once_flag once[kNumIsas];
  static std::unique_ptr<KernelTable> tables[kNumIsas];
  int i = static_cast<int>(isa);
  std::call_once(once[i], [&] { tables[i] = std::make_unique<KernelTable>(make_table(isa)); });
  return *tables[i];
}

namespace {
// The table every op uses: chosen once from the CPU and OFFGRAPH_ISA, switched
// only by set_active_isa (tests and benches).
std::atomic<const KernelTable*> g_active{nullptr};
std::once_flag g_active_once;
}  // namespace

const KernelTable& active_table() {
  const KernelTable* k = g_active.load(std::memory_order_acquire);
  if (k) return *k;
  std::call_once(g_active_once, [] {
    const KernelTable* t = &kernel_table(chosen_isa());
    const KernelTable* none = nullptr;
    g_active.compare_exchange_strong(none, t, std::memory_order_acq_rel);
  });
  return *g_active.load(std::memory_order_acquire);
}

Isa set_active_isa(Isa isa) {
  const KernelTable& next = kernel_table(isa);
  const Isa previous = active_table().isa;
  g_active.store(&next, std::memory_order_release);
  return previous;
}

std::string isa_summary() {
  std::string compiled, detected;
  for (Isa isa : arch::isas()) {
    compiled += std::string(compiled.empty() ? "" : " ") + isa_str(isa);
    if (isa_available(isa)) detected += std::string(detected.empty() ? "" : " ") + isa_str(isa);
  }
  const std::string tuning = arch::tuning_summary();
  return "compiled: " + compiled + "; this CPU: " + detected + "; in use: " + isa_name() +
         (tuning.empty() ? "" : "; tuning: " + tuning);
}

std::vector<Isa> available_isas() {
  std::vector<Isa> v;
  for (Isa isa : arch::isas())
    if (isa_available(isa)) v.push_back(isa);
  return v;
}

std::vector<Isa> compiled_isas() { return {arch::isas().begin(), arch::isas().end()}; }

bool attend_dtype_supported(DType t) {
  for (DType d : kAttendDTypes)
    if (d == t) return true;
  return false;
}

const AttendKernels& attend_kernels_with(const KernelTable& k, DType t) {
  OG_CHECK(attend_dtype_supported(t), "attention: no kernels for K/V stored as ",
           dtype_name(static_cast<uint32_t>(t)));
  return k.attend[id_of(t)];
}

const AttendKernels& attend_kernels(DType t) { return attend_kernels_with(active_table(), t); }

bool weight_dtype_supported(DType t) {
  for (DType d : kWeightDTypes)
    if (d == t) return true;
  return false;
}

const char* isa_name() { return isa_str(active_table().isa); }

void dequantize_row_with(const KernelTable& k, DType t, const void* src, float* dst, int64_t n) {
  check_row(t, n, "dequantize_row");
  if (RowFn f = k.dequantize[id_of(t)]) return f(src, dst, n);
  ref::dequantize_row(t, src, dst, n);
}

float dot_row_with(const KernelTable& k, DType t, const void* w_row, const float* x, int64_t n) {
  check_row(t, n, "dot_row");
  if (DotFn f = k.dot[id_of(t)]) return f(w_row, x, n);
  return ref::dot_row(t, w_row, x, n);
}

namespace {
void check_matmul(const TensorView& w, int64_t n_x) {
  OG_CHECK(w.shape.size() == 2, "matmul: weight '", w.name, "' must be 2-D, got shape ", shape_str(w.shape));
  OG_CHECK(weight_dtype_supported(w.dtype), "matmul: weight '", w.name, "' has dtype ",
           dtype_name(static_cast<uint32_t>(w.dtype)), ", which has no kernels");
  OG_CHECK(w.shape[1] % dtype_info(w.dtype).block == 0, "matmul: weight '", w.name, "' rows of ", w.shape[1],
           " elements are not whole ", dtype_info(w.dtype).name, " blocks");
  OG_CHECK(n_x >= 0, "matmul: negative row count ", n_x, " for weight '", w.name, "'");
}

// Quantizes x once into one activation layout (MatmulImpl::prepare) at a.
// Prefill-sized batches quantize their rows over the pool (rows are
// independent, MatmulImpl): serial, this was ~3 % of a 2-thread pp512 with
// the other thread idle. Each row gets the same bytes either way.
void prepare_act(const MatmulImpl& impl, const float* x, int64_t n_x, int64_t n_in, uint8_t* a) {
  const int64_t stride = impl.act_bytes(1, n_in);
  if (n_x >= 32 && stride % 64 == 0) {
    thread_pool().parallel_for(n_x, [&](int64_t i0, int64_t i1) {
      impl.prepare(x + i0 * n_in, i1 - i0, n_in, a + i0 * stride);
    });
  } else {
    impl.prepare(x, n_x, n_in, a);
  }
}

// One weight of a group as the job sees it: its output tiles are the job's
// items [tile0, tile0 + n_tiles); its activations are the group scratch's
// bytes from act_off (-1: the kernel reads x), which it prepares when
// prepares is set (the first part of each distinct layout).
struct GroupPart {
  const MatmulImpl* impl = nullptr;
  const uint8_t* w = nullptr;
  int64_t row_bytes = 0, n_out = 0, tile0 = 0, n_tiles = 0, act_off = -1;
  bool prepares = false;
  float* y = nullptr;
};

// The parts of a checked group (weights with no rows are left out, those with
// no columns get zero outputs here); returns their number and the scratch
// bytes their activations need in *act_total.
int plan_group(const KernelTable& k, std::span<const MatmulTarget> targets, const float* x, int64_t n_x,
               int64_t n_in, GroupPart* parts, int64_t* act_total) {
  int n = 0;
  *act_total = 0;
  for (const MatmulTarget& t : targets) {
    const TensorView& w = *t.w;
    if (w.shape[0] == 0) continue;
    if (n_in == 0) {
      std::fill(t.y, t.y + n_x * w.shape[0], 0.0f);
      continue;
    }
    OG_CHECK(w.data && x && t.y, "matmul: null pointer for weight '", w.name, "'");
    GroupPart& p = parts[n];
    p.impl = &k.matmul[id_of(w.dtype)];
    p.w = static_cast<const uint8_t*>(w.data);
    p.row_bytes = w.row_bytes();
    p.n_out = w.shape[0];
    p.n_tiles = (p.n_out + p.impl->row_tile - 1) / p.impl->row_tile;
    p.tile0 = n > 0 ? parts[n - 1].tile0 + parts[n - 1].n_tiles : 0;
    p.y = t.y;
    if (p.impl->prepare) {  // one buffer per layout (kernel_table.h: prepare and act_bytes name it)
      for (int j = 0; j < n && p.act_off < 0; ++j)
        if (parts[j].impl->prepare == p.impl->prepare && parts[j].impl->act_bytes == p.impl->act_bytes)
          p.act_off = parts[j].act_off;
      if (p.act_off < 0) {
        p.act_off = *act_total;
        p.prepares = true;
        *act_total += (p.impl->act_bytes(n_x, n_in) + 63) / 64 * 64;
      }
    }
    ++n;
  }
  return n;
}
}  // namespace

void matmul_group_with(const KernelTable& k, std::span<const MatmulTarget> targets, const float* x, int64_t n_x) {
  OG_CHECK(targets.size() <= kMaxMatmulGroup, "matmul_group: ", targets.size(), " weights (at most ",
           kMaxMatmulGroup, ")");
  if (targets.empty()) return;
  for (const MatmulTarget& t : targets) check_matmul(*t.w, n_x);
  const int64_t n_in = targets[0].w->shape[1];
  for (const MatmulTarget& t : targets)
    OG_CHECK(t.w->shape[1] == n_in, "matmul_group: weight '", t.w->name, "' has ", t.w->shape[1],
             " columns, the group's input has ", n_in);
  if (n_x == 0) return;
  GroupPart parts[kMaxMatmulGroup];
  int64_t act_total = 0;
  const int n_parts = plan_group(k, targets, x, n_x, n_in, parts, &act_total);
  if (n_parts == 0) return;
  thread_local std::vector<Line> scratch;
  scratch.resize(static_cast<size_t>(act_total / 64));
  uint8_t* act = reinterpret_cast<uint8_t*>(scratch.data());
  for (int i = 0; i < n_parts; ++i)
    if (parts[i].prepares) prepare_act(*parts[i].impl, x, n_x, n_in, act + parts[i].act_off);
  // A chunk [t0, t1) of the job may span several parts: each computes its tiles in it.
  auto run = [&](int64_t t0, int64_t t1) {
    for (int i = 0; i < n_parts; ++i) {
      const GroupPart& p = parts[i];
      const int64_t b = std::max(t0, p.tile0) - p.tile0, e = std::min(t1, p.tile0 + p.n_tiles) - p.tile0;
      if (b >= e) continue;
      const int64_t tile = p.impl->row_tile;
      p.impl->rows(p.w, p.row_bytes, n_in, b * tile, std::min(p.n_out, e * tile), x,
                   p.act_off < 0 ? nullptr : act + p.act_off, n_x, p.y, p.n_out);
    }
  };
  // Small products are not worth waking the pool for.
  double work = 0;
  for (int i = 0; i < n_parts; ++i)
    work += static_cast<double>(parts[i].n_out) * static_cast<double>(parts[i].row_bytes) * static_cast<double>(n_x);
  const int64_t n_tiles = parts[n_parts - 1].tile0 + parts[n_parts - 1].n_tiles;
  if (work < 256.0 * 1024.0) {
    run(0, n_tiles);
  } else {
    thread_pool().parallel_for(n_tiles, run);
  }
}

void matmul_with(const KernelTable& k, const TensorView& w, const float* x, int64_t n_x, float* y) {
  const MatmulTarget one{&w, y};
  matmul_group_with(k, std::span<const MatmulTarget>(&one, 1), x, n_x);
}

// ---- ops.h ----

DType matmul_layout(DType t) {
  const int to = active_table().repack_to[id_of(t)];
  return to ? static_cast<DType>(to) : t;
}

namespace {
// A repacking that rewrites each block on its own, over the pool in chunks
// (model loading rewrites hundreds of MB through these).
void repack_blocks(void (*fn)(const uint8_t*, uint8_t*, int64_t), uint8_t* p, int64_t n_blocks, int64_t block_bytes) {
  constexpr int64_t kChunk = 4096;
  thread_pool().parallel_for((n_blocks + kChunk - 1) / kChunk, [&](int64_t c0, int64_t c1) {
    uint8_t* q = p + c0 * kChunk * block_bytes;
    fn(q, q, std::min(n_blocks, c1 * kChunk) - c0 * kChunk);
  });
}
}  // namespace

void repack_rows(DType from, DType to, void* data, int64_t n_rows, int64_t n_in) {
  const int64_t block = dtype_info(from).block;
  OG_CHECK(n_rows >= 0 && n_in >= 0 && n_in % block == 0, "repack_rows: ", n_rows, " rows of ", n_in, " elements");
  uint8_t* p = static_cast<uint8_t*>(data);
  const int64_t n_blocks = n_rows * (n_in / block);
  if (from == DType::Q4_K && to == DType::Q4_K_R) return repack_blocks(&ref::repack_q4_k_r, p, n_blocks, 144);
  if (from == DType::Q4_K_R && to == DType::Q4_K) return repack_blocks(&ref::unpack_q4_k_r, p, n_blocks, 144);
  if (from == DType::Q6_K && to == DType::Q6_K_R) return repack_blocks(&ref::repack_q6_k_r, p, n_blocks, 210);
  if (from == DType::Q6_K_R && to == DType::Q6_K) return repack_blocks(&ref::unpack_q6_k_r, p, n_blocks, 210);
  if (from == DType::Q8_0 && to == DType::Q8_0_R) return ref::repack_q8_0_r(p, n_rows, n_in);
  if (from == DType::Q8_0_R && to == DType::Q8_0) return ref::unpack_q8_0_r(p, n_rows, n_in);
  if (from == DType::Q5_K && to == DType::Q5_K_R) return repack_blocks(&ref::repack_q5_k_r, p, n_blocks, 176);
  if (from == DType::Q5_K_R && to == DType::Q5_K) return repack_blocks(&ref::unpack_q5_k_r, p, n_blocks, 176);
  if (from == DType::Q4_0 && to == DType::Q4_0_R) return ref::repack_q4_0_r(p, n_rows, n_in);
  if (from == DType::Q4_0_R && to == DType::Q4_0) return ref::unpack_q4_0_r(p, n_rows, n_in);
  if (from == DType::Q4_K && to == DType::Q4_K_R16) return ref::repack_q4_k_r16(p, n_rows, n_in);
  if (from == DType::Q4_K_R16 && to == DType::Q4_K) return ref::unpack_q4_k_r16(p, n_rows, n_in);
  if (from == DType::Q6_K && to == DType::Q6_K_R16) return ref::repack_q6_k_r16(p, n_rows, n_in);
  if (from == DType::Q6_K_R16 && to == DType::Q6_K) return ref::unpack_q6_k_r16(p, n_rows, n_in);
  if (from == DType::IQ4_NL && to == DType::IQ4_NL_R) return ref::repack_q4_0_r(p, n_rows, n_in);  // same bytes
  if (from == DType::IQ4_NL_R && to == DType::IQ4_NL) return ref::unpack_q4_0_r(p, n_rows, n_in);
  if (from == DType::MXFP4 && to == DType::MXFP4_R) return ref::repack_mxfp4_r(p, n_rows, n_in);
  if (from == DType::MXFP4_R && to == DType::MXFP4) return ref::unpack_mxfp4_r(p, n_rows, n_in);
  fail("repack_rows: no repacking from ", dtype_name(static_cast<uint32_t>(from)), " to ",
       dtype_name(static_cast<uint32_t>(to)));
}

void matmul(const TensorView& w, const float* x, int64_t n_x, float* y) { matmul_with(active_table(), w, x, n_x, y); }

void matmul_group(std::span<const MatmulTarget> targets, const float* x, int64_t n_x) {
  matmul_group_with(active_table(), targets, x, n_x);
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  dequantize_row_with(active_table(), t, src, dst, n);
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  check_row(t, n, "quantize_row");
  ref::quantize_row(t, src, dst, n);
}

float dot_row(DType t, const void* w_row, const float* x, int64_t n) {
  return dot_row_with(active_table(), t, w_row, x, n);
}

void get_row(const TensorView& table, int64_t r, float* dst) {
  OG_CHECK(table.shape.size() == 2, "get_row: table '", table.name, "' must be 2-D, got shape ",
           shape_str(table.shape));
  OG_CHECK(r >= 0 && r < table.shape[0], "get_row: row ", r, " is out of range for table '", table.name,
           "' of shape ", shape_str(table.shape));
  check_weight_dtype(table.dtype, "get_row");
  if (ref::is_interleaved(table.dtype)) {  // rows interleaved in groups: gather row r as its file dtype
    thread_local std::vector<uint8_t> row;
    row.resize(static_cast<size_t>(table.row_bytes()));
    const DType plain = ref::interleaved_row(table.dtype, static_cast<const uint8_t*>(table.data), table.shape[0],
                                             table.shape[1], r, row.data());
    return dequantize_row(plain, row.data(), dst, table.shape[1]);
  }
  dequantize_row(table.dtype, table.row(r), dst, table.shape[1]);
}

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  OG_CHECK(n > 0, "rms_norm: empty vector");
  active_table().rms_norm(x, w, eps, n, y);
}

// Encoder-only ops: the reference on every ISA (a few rows per layer; not a hot path yet).
void layer_norm(const float* x, const float* w, const float* b, float eps, int64_t n, float* y) {
  OG_CHECK(n > 0, "layer_norm: empty vector");
  ref::layer_norm(x, w, b, eps, n, y);
}

void gelu_erf(float* x, int64_t n) { ref::gelu_erf(x, n); }

void rope(float* x, int64_t head_dim, int64_t n_rot, int64_t pos, const float* inv_freq, bool interleaved) {
  OG_CHECK(n_rot >= 0 && n_rot % 2 == 0 && n_rot <= head_dim, "rope: rotated dims ", n_rot,
           " must be even and at most the head dim ", head_dim);
  ref::rope(x, head_dim, n_rot, pos, inv_freq, interleaved);
}

void rope_angles(int64_t pos, int64_t n_rot, const float* inv_freq, double* cs) {
  OG_CHECK(n_rot >= 0 && n_rot % 2 == 0, "rope_angles: rotated dims ", n_rot, " must be even");
  ref::rope_angles(pos, n_rot, inv_freq, cs);
}

void rope_apply(float* x, int64_t n_rot, const double* cs, bool interleaved) {
  OG_CHECK(n_rot >= 0 && n_rot % 2 == 0, "rope_apply: rotated dims ", n_rot, " must be even");
  ref::rope_apply(x, n_rot, cs, interleaved);
}

void softmax(float* x, int64_t n) { active_table().softmax(x, n); }
void silu_mul(float* gate, const float* up, int64_t n) { active_table().silu_mul(gate, up, n); }
void gelu_tanh_mul(float* gate, const float* up, int64_t n) { active_table().gelu_tanh_mul(gate, up, n); }
void add(float* y, const float* x, int64_t n) { active_table().add(y, x, n); }
void scale(float* y, float s, int64_t n) { active_table().scale(y, s, n); }
void f32_to_f16_row(const float* x, void* dst, int64_t n) { active_table().f32_to_f16_row(x, dst, n); }

}  // namespace og::kernels
