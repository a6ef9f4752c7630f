// Policy resolution, row codecs, step planning, names and describe() text
// shared by every cache kind.
#include "kv/kv_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "base/error.h"
#include "kernels/ops.h"
#include "kv/kv_cache.h"
#include "tensor/dtype.h"

namespace og {

const char* kv_dtype_name(KvDType t) {
  switch (t) {
    case KvDType::F32: return "f32";
    case KvDType::F16: return "f16";
    case KvDType::BF16: return "bf16";
    case KvDType::Q8_0: return "q8_0";
  }
  return "?";
}

bool kv_dtype_from_name(const std::string& s, KvDType* out) {
  for (KvDType t : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {
    if (s == kv_dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

const char* kv_kind_name(KvKind k) {
  switch (k) {
    case KvKind::kSequence: return "sequence";
    case KvKind::kBatchedSequence: return "batched-sequence";
    case KvKind::kBatchedCell: return "batched-cell";
    case KvKind::kReference: return "reference";
  }
  return "?";
}

bool kv_kind_from_name(const std::string& s, KvKind* out) {
  for (KvKind k : {KvKind::kSequence, KvKind::kBatchedSequence, KvKind::kBatchedCell, KvKind::kReference}) {
    if (s == kv_kind_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

}  // namespace og

namespace og::kv {

DType storage_dtype(KvDType t) {
  switch (t) {
    case KvDType::F32: return DType::F32;
    case KvDType::F16: return DType::F16;
    case KvDType::BF16: return DType::BF16;
    case KvDType::Q8_0: return DType::Q8_0;
  }
  return DType::F32;
}

int64_t row_bytes(KvDType t, int dim) {
  switch (t) {
    case KvDType::F32: return 4 * int64_t{dim};
    case KvDType::F16:
    case KvDType::BF16: return 2 * int64_t{dim};
    case KvDType::Q8_0: return int64_t{(dim + kQ8Block - 1) / kQ8Block} * kQ8BlockBytes;
  }
  return 0;
}

static void encode_q8_0(const float* x, int dim, uint8_t* dst) {
  for (int b0 = 0; b0 < dim; b0 += kQ8Block) {
    int n = std::min(kQ8Block, dim - b0);
    float amax = 0.f;
    for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[b0 + i]));
    uint16_t dh = f32_to_f16(amax / 127.f);
    float d = f16_to_f32(dh);
    float id = d > 0.f ? 1.f / d : 0.f;
    std::memcpy(dst, &dh, 2);
    auto* q = reinterpret_cast<int8_t*>(dst + 2);
    for (int i = 0; i < kQ8Block; ++i) {
      float v = i < n ? std::nearbyint(x[b0 + i] * id) : 0.f;
      q[i] = static_cast<int8_t>(std::clamp(v, -127.f, 127.f));
    }
    dst += kQ8BlockBytes;
  }
}

void encode_row(KvDType t, const float* x, int dim, uint8_t* dst) {
  switch (t) {
    case KvDType::F32: std::memcpy(dst, x, 4 * size_t(dim)); return;
    case KvDType::F16: kernels::f32_to_f16_row(x, dst, dim); return;
    case KvDType::BF16:
      for (int i = 0; i < dim; ++i) {
        uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case KvDType::Q8_0: encode_q8_0(x, dim, dst); return;
  }
}

bool k_blocked(KvDType t) { return t != KvDType::Q8_0; }

void encode_key_lane(KvDType t, const float* x, int dim, uint8_t* block, int lane) {
  OG_CHECK(k_blocked(t) && lane >= 0 && lane < kernels::kKeyBlock, "kv cache: internal error: no blocked K of ",
           kv_dtype_name(t), " at lane ", lane);
  const int es = t == KvDType::F32 ? 4 : 2;
  constexpr int kChunk = 64;  // values encoded at once, then spread over their lanes
  uint8_t row[kChunk * 4];
  for (int e0 = 0; e0 < dim; e0 += kChunk) {
    const int m = std::min(kChunk, dim - e0);
    encode_row(t, x + e0, m, row);
    for (int e = 0; e < m; ++e)
      std::memcpy(block + (int64_t{e0 + e} * kernels::kKeyBlock + lane) * es, row + e * es, size_t(es));
  }
}

void read_key_lane(KvDType t, const uint8_t* block, int dim, int lane, uint8_t* row) {
  const int es = t == KvDType::F32 ? 4 : 2;
  for (int e = 0; e < dim; ++e)
    std::memcpy(row + int64_t{e} * es, block + (int64_t{e} * kernels::kKeyBlock + lane) * es, size_t(es));
}

void write_key_lane(KvDType t, const uint8_t* row, int dim, uint8_t* block, int lane) {
  const int es = t == KvDType::F32 ? 4 : 2;
  for (int e = 0; e < dim; ++e)
    std::memcpy(block + (int64_t{e} * kernels::kKeyBlock + lane) * es, row + int64_t{e} * es, size_t(es));
}

void decode_row(KvDType t, const uint8_t* src, int dim, float* x) {
  uint16_t h;
  switch (t) {
    case KvDType::F32: std::memcpy(x, src, 4 * size_t(dim)); return;
    case KvDType::F16:
      for (int i = 0; i < dim; ++i) std::memcpy(&h, src + 2 * i, 2), x[i] = f16_to_f32(h);
      return;
    case KvDType::BF16:
      for (int i = 0; i < dim; ++i) std::memcpy(&h, src + 2 * i, 2), x[i] = bf16_to_f32(h);
      return;
    case KvDType::Q8_0:
      for (int i = 0; i < dim; ++i) {
        const uint8_t* blk = src + (i / kQ8Block) * kQ8BlockBytes;
        std::memcpy(&h, blk, 2);
        x[i] = f16_to_f32(h) * static_cast<float>(reinterpret_cast<const int8_t*>(blk + 2)[i % kQ8Block]);
      }
      return;
  }
}

Resolved resolve(const KvGeometry& g, const KvPolicy& p) {
  OG_CHECK(!g.caches.empty(), "kv geometry: no caches");
  OG_CHECK(g.layer_writes.empty() || g.layer_writes.size() == g.layer_cache.size(), "kv geometry: layer_writes has ",
           g.layer_writes.size(), " entries for ", g.layer_cache.size(), " layers");
  for (size_t l = 0; l < g.layer_cache.size(); ++l)
    OG_CHECK(g.layer_cache[l] >= 0 && size_t(g.layer_cache[l]) < g.caches.size(), "kv geometry: layer ", l,
             " maps to cache ", g.layer_cache[l], " of ", g.caches.size());
  for (size_t c = 0; c < g.caches.size(); ++c) {
    const KvCacheSpec& s = g.caches[c];
    OG_CHECK(s.n_kv_heads > 0 && s.head_dim_k > 0 && s.head_dim_v > 0 && s.window >= 0, "kv geometry: cache ", c,
             " has n_kv_heads=", s.n_kv_heads, " head_dim_k=", s.head_dim_k, " head_dim_v=", s.head_dim_v,
             " window=", s.window);
  }
  OG_CHECK(p.max_capacity >= 1, "kv policy: max_capacity must be >= 1 (got ", p.max_capacity, ")");
  OG_CHECK(p.initial_capacity >= 1, "kv policy: initial_capacity must be >= 1 (got ", p.initial_capacity, ")");
  OG_CHECK(p.max_write >= 1, "kv policy: max_write must be >= 1 (got ", p.max_write, ")");
  OG_CHECK(p.max_sequences >= 1, "kv policy: max_sequences must be >= 1 (got ", p.max_sequences, ")");
  OG_CHECK(p.block_size >= 1 && p.block_size <= 4096, "kv policy: block_size must be in [1, 4096] (got ",
           p.block_size, ")");
  Resolved r;
  r.policy = p;
  r.policy.initial_capacity = std::min(p.initial_capacity, p.max_capacity);
  // Only the entries that reach a cache narrow the max write (entries past the
  // number of caches are unused; the runtime warns about them).
  for (size_t i = 0; i < p.windows.size(); ++i) {
    const int w = p.windows[i];
    OG_CHECK(w >= 0, "kv policy: window override ", w, " is negative");
    if (w > 0 && i < g.caches.size()) r.policy.max_write = std::min<int64_t>(r.policy.max_write, w);
  }
  for (size_t c = 0; c < g.caches.size(); ++c) {
    const KvCacheSpec& s = g.caches[c];
    CacheLayout l;
    l.n_kv_heads = s.n_kv_heads;
    l.head_dim_k = s.head_dim_k;
    l.head_dim_v = s.head_dim_v;
    l.window = effective_window(g, p, c);
    if (l.window > 0) l.slots = std::min<int64_t>(int64_t{l.window} + r.policy.max_write - 1, p.max_capacity);
    l.row_bytes_k = row_bytes(p.dtype, s.head_dim_k);
    l.row_bytes_v = row_bytes(p.dtype, s.head_dim_v);
    r.caches.push_back(l);
  }
  return r;
}

std::string describe_text(const char* kind, const KvGeometry& g, const Resolved& r) {
  const KvPolicy& p = r.policy;
  std::string s = cat("[cache] off-graph ", kind, " | capacity=", p.max_capacity, " initial=", p.initial_capacity,
                      " kv_dtype=", kv_dtype_name(p.dtype), " max_write=", p.max_write, "\n");
  int flat = 0;
  std::map<int, int> rings;  // window -> layers
  for (int c : g.layer_cache) {
    int w = r.caches[c].window;
    if (w == 0) ++flat;
    else ++rings[w];
  }
  s += cat("        ", g.layer_cache.size(), " layers: ", flat, " flat");
  if (rings.size() == 1) {
    s += cat(" + ", rings.begin()->second, " ring(window ", rings.begin()->first, ")");
  } else {
    for (auto [w, n] : rings) s += cat(" + ", n, " ring(", w, ")");
  }
  return s;
}

KvResult refuse(KvStatus st, std::string message, int64_t history_begin) {
  KvResult r;
  r.status = st;
  r.message = std::move(message);
  r.history_begin = history_begin;
  return r;
}

const char* status_name(KvStatus s) {
  switch (s) {
    case KvStatus::kOk: return "ok";
    case KvStatus::kCapacityExceeded: return "capacity exceeded";
    case KvStatus::kWriteTooLong: return "write too long";
    case KvStatus::kUnknownSequence: return "unknown sequence";
    case KvStatus::kPoolExhausted: return "pool exhausted";
    case KvStatus::kHistoryUnavailable: return "history unavailable";
    case KvStatus::kInvalid: return "invalid";
  }
  return "?";
}

void StepState::start(std::span<const KvRow> r, size_t n_caches) {
  active = true;
  rows.assign(r.begin(), r.end());
  written.assign(n_caches, 0);
}

void StepState::finish() {
  active = false;
  rows.clear();
  plan.clear();
}

void check_attend(const StepState& st, const Resolved& r, int cache_id, std::span<const KvRow> rows,
                  const float* q, int n_heads, const float* k, const float* v, const float* out) {
  OG_CHECK(st.active, "kv cache: update_and_attend outside begin_step/end_step");
  OG_CHECK(cache_id >= 0 && size_t(cache_id) < r.caches.size(), "kv cache: cache id ", cache_id, " out of range [0, ",
           r.caches.size(), ")");
  OG_CHECK(rows.size() == st.rows.size(), "kv cache: update_and_attend got ", rows.size(),
           " rows but begin_step had ", st.rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    OG_CHECK(rows[i].seq == st.rows[i].seq && rows[i].pos == st.rows[i].pos, "kv cache: row ", i,
             " differs from the row given to begin_step");
  const CacheLayout& l = r.caches[cache_id];
  OG_CHECK(n_heads > 0 && n_heads % l.n_kv_heads == 0, "kv cache: n_heads=", n_heads,
           " is not a positive multiple of n_kv_heads=", l.n_kv_heads, " (cache ", cache_id, ")");
  OG_CHECK((k == nullptr) == (v == nullptr), "kv cache: k and v must both be given or both be null");
  if (k == nullptr)
    OG_CHECK(st.written[cache_id] || rows.empty(), "kv cache: cache ", cache_id,
             " read before its K/V were written in this step");
  else
    OG_CHECK(!st.written[cache_id], "kv cache: cache ", cache_id, " written twice in one step");
  OG_CHECK(rows.empty() || (q != nullptr && out != nullptr), "kv cache: q and out must not be null");
}

void check_step_complete(const StepState& st, const KvGeometry& g) {
  OG_CHECK(st.active, "kv cache: end_step without begin_step");
  if (st.rows.empty()) return;
  auto need = [&](int c) {
    OG_CHECK(st.written[c], "kv cache: end_step but cache ", c, " was not written in this step");
  };
  if (g.layer_cache.empty())
    for (size_t c = 0; c < g.caches.size(); ++c) need(int(c));
  for (int c : g.layer_cache) need(c);
}

void check_no_step(const StepState& st, const char* what) {
  OG_CHECK(!st.active, "kv cache: ", what, " during a step (call end_step or abort_step first)");
}

size_t find_seq(const std::vector<SeqStep>& plan, int seq) {
  size_t i = 0;
  while (i < plan.size() && plan[i].seq != seq) ++i;
  return i;
}

namespace {

// Bidirectional spans (KvRow::span_end): each row's span ends within its
// sequence's rows of this step (the keys it sees are written by this step),
// and the last visible position never decreases along a sequence's rows (a
// span is whole; the attention's tiles rely on it).
KvResult check_spans(std::span<const KvRow> rows, const std::vector<SeqStep>& plan) {
  bool any = false;
  for (size_t j = 0; j < rows.size(); ++j) {
    const KvRow& r = rows[j];
    if (r.span_end == 0) continue;
    any = true;
    const SeqStep& s = plan[find_seq(plan, r.seq)];
    if (r.span_end <= r.pos || r.span_end > s.begin + s.n)
      return refuse(KvStatus::kInvalid, cat("kv cache: sequence ", r.seq, " row at position ", r.pos,
                                            " is in a bidirectional span ending at ", r.span_end,
                                            ", outside this step's positions [", r.pos, ", ", s.begin + s.n,
                                            "] (a span must be whole in one step)"));
  }
  if (!any) return KvResult::success();  // token-only steps: nothing more to check
  for (size_t j = 1; j < rows.size(); ++j)
    for (size_t i = j; i-- > 0;)
      if (rows[i].seq == rows[j].seq) {
        if (last_visible(rows[j]) < last_visible(rows[i]))
          return refuse(KvStatus::kInvalid, cat("kv cache: sequence ", rows[j].seq, " row at position ",
                                                rows[j].pos, " sees less than the row before it (bidirectional "
                                                "spans must be whole, one after another)"));
        break;
      }
  return KvResult::success();
}

}  // namespace

KvResult check_plan(std::span<const KvRow> rows, const KvPolicy& p, std::vector<SeqStep>* out) {
  std::vector<SeqStep>& plan = *out;
  for (const SeqStep& s : plan)
    if (s.begin < 0) return refuse(KvStatus::kUnknownSequence, cat("kv cache: unknown sequence ", s.seq));
  for (const KvRow& r : rows) {
    const size_t i = find_seq(plan, r.seq);
    int64_t want = plan[i].begin + plan[i].n;
    if (r.pos != want)
      return refuse(KvStatus::kInvalid, cat("kv cache: sequence ", r.seq, " row at position ", r.pos,
                                            " but the next position is ", want));
    ++plan[i].n;
  }
  if (KvResult r = check_spans(rows, plan); !r.ok()) return r;
  for (const SeqStep& s : plan) {
    if (s.n > p.max_write)
      return refuse(KvStatus::kWriteTooLong, cat("kv cache: sequence ", s.seq, " writes ", s.n,
                                                 " rows in one step, more than max_write=", p.max_write));
    if (s.begin + s.n > p.max_capacity)
      return refuse(KvStatus::kCapacityExceeded, cat("kv cache: sequence ", s.seq, " would hold ", s.begin + s.n,
                                                     " positions, more than capacity=", p.max_capacity));
  }
  return KvResult::success();
}

}  // namespace og::kv
