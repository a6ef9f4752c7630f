// The kernel API: the only kernels header other folders include. Each op has a
// scalar reference in ref/; faster variants (x86/ AVX2, AVX-512, ...) register
// in dispatch.cpp and are chosen at run time. All activations are f32.
#pragma once

#include <cstdint>
#include <string>
#include <span>

#include "tensor/tensor_view.h"

namespace og::kernels {

// ---- weights ----
// Dtypes with kernels: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K
// IQ4_NL IQ4_XS MXFP4, and the in-memory layouts Q4_K_R, Q4_K_R16, Q5_K_R,
// Q6_K_R, Q6_K_R16, Q8_0_R, Q4_0_R, IQ4_NL_R and MXFP4_R (matmul_layout).
bool weight_dtype_supported(DType t);

// y[n_x, n_out] = x[n_x, n_in] · W[n_out, n_in]^T  (W.shape = {n_out, n_in}, any supported dtype).
// Runs on the process thread pool.
void matmul(const TensorView& w, const float* x, int64_t n_x, float* y);

// One product of a matmul_group: y[n_x, w->shape[0]] = x · (*w)^T.
struct MatmulTarget {
  const TensorView* w;
  float* y;
};
constexpr size_t kMaxMatmulGroup = 8;
// Up to kMaxMatmulGroup matmuls that share their input x[n_x, n_in] (every
// weight has n_in columns; dtypes may differ), run as one pool job: each
// distinct activation layout is prepared once and the threads take the
// weights' output rows in one sweep, so the group pays one dispatch and one
// end-of-job wait instead of one per weight (q/k/v, gate/up in decode).
// Guarantee: every y holds, bit for bit, what matmul(*w, x, n_x, y) writes.
// The y buffers must not overlap each other or x.
void matmul_group(std::span<const MatmulTarget> targets, const float* x, int64_t n_x);

// The in-memory layout the active instruction set's matmul wants for weights
// stored as t (Q4_K -> Q4_K_R or Q4_K_R16, Q5_K -> Q5_K_R, Q6_K -> Q6_K_R or
// Q6_K_R16, Q8_0 -> Q8_0_R, Q4_0 -> Q4_0_R, IQ4_NL -> IQ4_NL_R, MXFP4 ->
// MXFP4_R where a kernel reads it and it pays), else t. A layout changes no
// value: matmul and get_row read every layout; dequantize_row and dot_row read
// Q4_K_R, Q5_K_R and Q6_K_R but refuse Q8_0_R, Q4_0_R, IQ4_NL_R, MXFP4_R (rows
// interleaved in groups of 8), Q4_K_R16 and Q6_K_R16
// (groups of 16): a row pointer alone does not locate one of their rows.
DType matmul_layout(DType t);
// Rewrites n_rows rows of n_in elements from layout `from` to `to` in place
// (same bytes per row); throws og::Error for a pair with no repacking.
void repack_rows(DType from, DType to, void* data, int64_t n_rows, int64_t n_in);

// One row of n elements (n a multiple of the dtype's block) to f32 / from f32.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
void quantize_row(DType t, const float* src, void* dst, int64_t n);
// Σ w[i]·x[i] over one row of a weight of dtype t.
float dot_row(DType t, const void* w_row, const float* x, int64_t n);
// Copies row `r` of an embedding table [n_vocab, d] to f32.
void get_row(const TensorView& table, int64_t r, float* dst);

// ---- elementwise / per-row ----
// y = x / sqrt(mean(x²) + eps) ⊙ w   (w may be nullptr: no weight). x and y may alias.
void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y);
// LayerNorm: y = (x - mean(x)) / sqrt(var(x) + eps) ⊙ w + b, var the biased
// (population) variance; w and b may be nullptr (1 and 0). x and y may alias.
// Encoders (BERT) normalise this way; one reference implementation for every ISA.
void layer_norm(const float* x, const float* w, const float* b, float eps, int64_t n, float* y);
// In-place RoPE of one head vector x[head_dim] at position pos, rotating the
// first n_rot dims. interleaved: pairs (x[2i], x[2i+1]); else rotate-half
// pairs (x[i], x[i + n_rot/2]). inv_freq[n_rot/2]: per-pair frequency
// (base^(-2i/n_rot) with any scaling already folded in).
void rope(float* x, int64_t head_dim, int64_t n_rot, int64_t pos, const float* inv_freq, bool interleaved);
// rope() in two steps, so that the angles of a position are computed once for
// all its heads: cs[2i] = cos(pos·inv_freq[i]), cs[2i+1] = sin(...) for the
// n_rot/2 pairs (double, so rope_apply rotates exactly as rope does).
void rope_angles(int64_t pos, int64_t n_rot, const float* inv_freq, double* cs);
void rope_apply(float* x, int64_t n_rot, const double* cs, bool interleaved);
void softmax(float* x, int64_t n);  // in place, numerically stable
// gate = act(gate) ⊙ up, in place in gate. silu(x) = x·σ(x); gelu_tanh as in PyTorch's approximate="tanh".
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_tanh_mul(float* gate, const float* up, int64_t n);
// x = gelu(x) in place, the exact form 0.5·x·(1 + erf(x/√2)) (BERT's "gelu"; an ungated MLP).
void gelu_erf(float* x, int64_t n);
void add(float* y, const float* x, int64_t n);          // y += x
void scale(float* y, float s, int64_t n);                 // y *= s
// n values to f16 at dst (2n bytes, any alignment), each exactly as
// tensor/dtype.h's f32_to_f16 rounds it (nearest even; overflow to inf; NaN
// stays NaN with its top payload bits): KV caches stored as f16 encode rows here.
void f32_to_f16_row(const float* x, void* dst, int64_t n);

// ---- attention over stored K/V rows ----
// The inner kernels of attention over a KV cache (kv/ drives them: blocks,
// online softmax, splits). A row holds one KV head's d values in its storage
// dtype: F32, F16, BF16, or Q8_0 as ceil(d / 32) blocks of an f16 scale and
// 32 int8, the last block zero-padded (so d need not be a multiple of 32).
// Keys per block of a blocked K layout (scores_blocked): the width of the
// AVX-512 kernel's vector, so that a block's dim e is one load for 16 keys
// and the scores need no horizontal sums.
constexpr int kKeyBlock = 16;
struct AttendKernels {
  // s[j*s_stride+i] = scale*(q_j·k_i), q [g, dk], k n rows of rbk bytes; same bits for any g, n, place
  void (*scores)(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
                 int64_t s_stride) = nullptr;
  // The same scores for K stored in blocks of kKeyBlock keys (F32, F16 and
  // BF16 only; nullptr for Q8_0): a block is [dk][kKeyBlock] values, value e
  // of the block's key l at element e * kKeyBlock + l, and blocks follow each
  // other (kKeyBlock * dk values apart). Key i is lane (lane + i) % kKeyBlock
  // of block (lane + i) / kKeyBlock from kb; lane < kKeyBlock. Only the n
  // keys' values are read (the other lanes of a block may be unwritten).
  // Guaranteed: a score's bits depend only on q_j, k_i and scale, never on
  // g, n, lane or the key's place (as scores), so a key scored in rows of one
  // call equals the same key scored alone. Within the per-dtype budget of
  // the row kernel (the summation order differs).
  void (*scores_blocked)(const float* q, int g, int dk, const uint8_t* kb, int lane, int64_t n, float scale,
                         float* s, int64_t s_stride) = nullptr;
  // out_j[dv] += Σ_i w[j * w_stride + i] * v_i, v: n rows of rbv bytes, added in row order
  void (*accum)(const float* w, int64_t w_stride, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv,
                float* out) = nullptr;
  // x[n] = exp(x - mx), returns the sum
  float (*exp_sum)(float* x, int64_t n, float mx) = nullptr;
  // the largest of x[0..n), n >= 1 (a max is exact: every ISA returns the same value)
  float (*max)(const float* x, int64_t n) = nullptr;
};
// Storage dtypes with attention kernels: F32, F16, BF16, Q8_0.
bool attend_dtype_supported(DType t);
// The kernels of the instruction set in use; throws og::Error for another dtype.
const AttendKernels& attend_kernels(DType t);

// ---- machine probes (offgraph bench) ----
// GB/s of reading `bytes` of buf once, split over the thread pool's threads,
// each a plain stream with the active ISA's widest loads (read_sum): the best
// of `passes` passes (other tenants only ever slow a pass down).
double read_bandwidth(const void* buf, int64_t bytes, int passes);
// The sum of the 64-bit words of buf (bytes a multiple of 8) as the active
// ISA's read probe computes it; every ISA returns the same value (tests check
// the probe against its scalar twin).
uint64_t read_sum(const void* buf, int64_t bytes);
// Multiply-adds per second of the active ISA's int8 dot product (int8, as
// the quantized matmuls use) or f32 FMA, every pool thread running a
// register-only loop for about `seconds`.
double madd_peak(bool int8, double seconds);

// ---- info ----
const char* isa_name();  // the instruction set chosen at run time: "avx512", "avxvnni", "avx2", "scalar"
// "compiled: scalar avx2 avxvnni avx512; this CPU: ...; in use: ...[; tuning: ...]"
// (offgraph --version; the tuning: arch.h tuning_summary).
std::string isa_summary();

}  // namespace og::kernels
