// The step protocol, the update_and_attend driver and the export/import of
// positions shared by the storing kinds.
#include "kv/kv_store_base.h"

#include <algorithm>
#include <cstring>

#include "base/thread_pool.h"

namespace og::kv {

StoreCacheBase::StoreCacheBase(const KvGeometry& g, const KvPolicy& p, const char* kind)
    : geo_(g), res_(resolve(g, p)), kind_(kind) {}

KvResult StoreCacheBase::begin_step(std::span<const KvRow> rows) {
  check_no_step(step_, "begin_step");
  KvResult r = plan_step(rows, res_.policy, [&](int s) { return length(s); }, &step_.plan);
  if (r.ok()) r = reserve_step(step_.plan);
  if (!r.ok()) {
    step_.plan.clear();
    return r;
  }
  step_.start(rows, res_.caches.size());
  return r;
}

void StoreCacheBase::end_step() {
  check_step_complete(step_, geo_);
  commit_step(step_.plan);
  step_.finish();
}

void StoreCacheBase::abort_step() { step_.finish(); }

KvResult StoreCacheBase::check_capacity(int seq, int64_t n) const {
  if (length(seq) < 0) return unknown(seq);
  if (n < 0) return refuse(KvStatus::kInvalid, cat("kv cache: can_extend by ", n));
  if (length(seq) + n > res_.policy.max_capacity)
    return refuse(KvStatus::kCapacityExceeded, cat("kv cache: sequence ", seq, " would hold ", length(seq) + n,
                                                   " positions, more than capacity=", res_.policy.max_capacity));
  return KvResult::success();
}

void StoreCacheBase::update_and_attend(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads,
                                       const float* k, const float* v, float scale, float* out,
                                       const float* sinks) {
  check_attend(step_, res_, cache_id, rows, q, n_heads, k, v, out);
  const CacheLayout& l = res_.caches[cache_id];
  const KvDType dt = res_.policy.dtype;
  const int nkv = l.n_kv_heads, dk = l.head_dim_k, dv = l.head_dim_v;
  if (k != nullptr) {
    for (size_t i = 0; i < rows.size(); ++i) {
      RowSlot s = write_slot(cache_id, rows[i].seq, rows[i].pos);
      for (int h = 0; h < nkv; ++h) {
        if (s.k_lane < 0) encode_row(dt, k + (i * nkv + h) * dk, dk, s.k + h * s.k_head_stride);
        else encode_key_lane(dt, k + (i * nkv + h) * dk, dk, s.k + h * s.k_head_stride, s.k_lane);
        encode_row(dt, v + (i * nkv + h) * dv, dv, s.v + h * s.v_head_stride);
      }
    }
    step_.written[cache_id] = 1;
  }
  attend_rows(cache_id, rows, q, n_heads, scale, out, sinks);
}

KvResult StoreCacheBase::export_positions(int seq, int64_t begin, int64_t end, std::vector<uint8_t>* out) const {
  const int64_t len = length(seq);
  if (len < 0) return unknown(seq);
  if (begin < 0 || begin > end || end > len)
    return refuse(KvStatus::kInvalid, cat("kv cache: cannot export positions [", begin, ", ", end, ") of sequence ",
                                          seq, " (length ", len, ")"));
  int64_t pb = 0;
  for (size_t c = 0; c < res_.caches.size(); ++c) {
    pb += res_.caches[c].position_bytes();
    const int64_t from = res_.caches[c].window > 0 && begin < end ? held_from(int(c), seq) : 0;
    if (begin < from)
      return refuse(KvStatus::kHistoryUnavailable,
                    cat("kv cache: cannot export position ", begin, " of sequence ", seq, ": ring cache ", c,
                        " holds it only from ", from),
                    from);
  }
  out->resize(size_t((end - begin) * pb));
  if (begin == end) return KvResult::success();
  const KvDType dt = res_.policy.dtype;
  uint8_t* dst = out->data();
  std::vector<KvSpan> spans;
  for (size_t c = 0; c < res_.caches.size(); ++c) {
    const CacheLayout& l = res_.caches[c];
    const int64_t rbk = l.row_bytes_k, rbv = l.row_bytes_v;
    int64_t ks = 0, vs = 0;
    spans.clear();
    read_spans(int(c), seq, begin, end - 1, &spans, &ks, &vs);
    for (const KvSpan& sp : spans) {
      for (int64_t i = 0; i < sp.n; ++i) {
        for (int h = 0; h < l.n_kv_heads; ++h, dst += rbk + rbv) {
          const uint8_t* k = sp.k + h * ks;
          if (sp.k_lane < 0) {
            std::memcpy(dst, k + i * rbk, size_t(rbk));
          } else {
            const int64_t lane = sp.k_lane + i;
            read_key_lane(dt, k + lane / kKeyBlock * kKeyBlock * rbk, l.head_dim_k, int(lane % kKeyBlock), dst);
          }
          std::memcpy(dst + rbk, sp.v + h * vs + i * rbv, size_t(rbv));
        }
      }
    }
  }
  return KvResult::success();
}

KvResult StoreCacheBase::import_positions(int seq, std::span<const uint8_t> data) {
  check_no_step(step_, "import_positions");
  const int64_t len = length(seq);
  if (len < 0) return unknown(seq);
  std::vector<int64_t> cache_pb;
  int64_t pb = 0;
  for (const CacheLayout& l : res_.caches) pb += cache_pb.emplace_back(l.position_bytes());
  if (int64_t(data.size()) % pb != 0)
    return refuse(KvStatus::kInvalid, cat("kv cache: cannot import ", data.size(), " bytes: not a whole number of ",
                                          pb, "-byte positions"));
  const int64_t n = int64_t(data.size()) / pb;
  if (n == 0) return KvResult::success();
  KvResult r = can_extend(seq, n);
  if (!r.ok()) return r;
  const KvDType dt = res_.policy.dtype;
  std::vector<KvRow> rows;
  for (int64_t a = 0; a < n; a += res_.policy.max_write) {
    const int64_t m = std::min(res_.policy.max_write, n - a);
    rows.clear();
    for (int64_t i = 0; i < m; ++i) rows.push_back({seq, len + a + i});
    r = begin_step(rows);
    if (!r.ok()) {
      if (a > 0) rewind(seq, a);  // flat caches always rewind; a ring may keep what it wrote
      return r;
    }
    const uint8_t* cache_src = data.data();
    for (size_t c = 0; c < res_.caches.size(); cache_src += n * cache_pb[c], ++c) {
      const CacheLayout& l = res_.caches[c];
      const int64_t rbk = l.row_bytes_k, rbv = l.row_bytes_v;
      for (int64_t i = 0; i < m; ++i) {
        const RowSlot s = write_slot(int(c), seq, len + a + i);
        const uint8_t* src = cache_src + (a + i) * cache_pb[c];
        for (int h = 0; h < l.n_kv_heads; ++h, src += rbk + rbv) {
          if (s.k_lane < 0) std::memcpy(s.k + h * s.k_head_stride, src, size_t(rbk));
          else write_key_lane(dt, src, l.head_dim_k, s.k + h * s.k_head_stride, s.k_lane);
          std::memcpy(s.v + h * s.v_head_stride, src + rbk, size_t(rbv));
        }
      }
      step_.written[c] = 1;
    }
    end_step();
  }
  return KvResult::success();
}

namespace {

// Query vectors (rows x heads of one KV head's group) a tile scores together:
// a 64-key block of scores is then 16 KiB, still in L1 with its K and V rows.
constexpr int64_t kTileQueries = 64;
constexpr int64_t kMaxTileRows = 32;

// A run of m consecutive rows of one sequence at consecutive positions that
// see keys from the same first position (a prefill chunk in a layer without a
// window, or inside the window): row r sees a prefix of what the last sees.
struct Tile {
  int64_t row0, m;
};

// attend_rows' per-call lists, kept per thread between calls.
struct AttendPlan {
  std::vector<Tile> tiles;
  std::vector<int64_t> singles, task_rows;
  std::vector<AttendPart> parts;
  std::vector<float> partials;
};

}  // namespace

void StoreCacheBase::attend_rows(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads, float scale,
                                 float* out, const float* sinks) const {
  const CacheLayout& l = res_.caches[cache_id];
  const int nkv = l.n_kv_heads, dk = l.head_dim_k, dv = l.head_dim_v;
  const int group = n_heads / nkv;
  // The sinks of KV head h's query group (nullptr: none).
  auto sinks_of = [&](int64_t h) { return sinks != nullptr ? sinks + h * group : nullptr; };
  auto first_pos = [&](const KvRow& r) { return l.window > 0 ? std::max<int64_t>(0, r.pos - l.window + 1) : 0; };
  // Runs of rows become tiles (each K/V block read once for all their
  // queries; kv_attend.h: the same bits as row by row); the other rows are
  // single tasks (row, KV head), and when there are too few of those to keep
  // the pool busy long histories are split into position ranges.
  const int64_t tile_max = std::clamp<int64_t>(kTileQueries / group, 1, kMaxTileRows);
  // The plan's lists live in this thread's scratch (capacity kept): a step
  // allocates nothing here once a step as large has run.
  thread_local AttendPlan plan;
  std::vector<Tile>& tiles = plan.tiles;
  std::vector<int64_t>& singles = plan.singles;
  std::vector<int64_t>& task_rows = plan.task_rows;
  std::vector<AttendPart>& parts = plan.parts;
  std::vector<float>& partials = plan.partials;
  tiles.clear();
  singles.clear();
  task_rows.clear();
  int64_t work = 0;
  for (size_t i = 0; i < rows.size();) {
    size_t e = i + 1;
    while (e < rows.size() && int64_t(e - i) < tile_max && rows[e].seq == rows[i].seq &&
           rows[e].pos == rows[e - 1].pos + 1 && first_pos(rows[e]) == first_pos(rows[i]))
      ++e;
    if (e - i >= 2) tiles.push_back({int64_t(i), int64_t(e - i)});
    else singles.push_back(int64_t(i));
    for (size_t j = i; j < e; ++j) work += last_visible(rows[j]) + 1 - first_pos(rows[j]);
    i = e;
  }
  work *= int64_t{n_heads} * (dk + dv);
  task_rows.reserve(singles.size() * nkv);
  for (int64_t r : singles)
    for (int h = 0; h < nkv; ++h)
      task_rows.push_back(last_visible(rows[size_t(r)]) + 1 - first_pos(rows[size_t(r)]));
  const int64_t n_slots = plan_attend_parts(task_rows, thread_pool().size(), &parts);
  const int64_t state_n = attend_state_floats(group, dv);
  partials.resize(size_t(n_slots * state_n));  // every slot is reset before use
  const AttendKernels& kr = attend_kernels(res_.policy.dtype);
  const int64_t n_parts = int64_t(parts.size());
  auto head_spans_of = [&](const std::vector<KvSpan>& spans, int h, int64_t ks, int64_t vs,
                           std::vector<KvSpan>* hs) {
    hs->assign(spans.begin(), spans.end());
    for (KvSpan& sp : *hs) sp.k += h * ks, sp.v += h * vs;
  };
  auto run = [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> scratch, state, qbuf;
    thread_local std::vector<KvSpan> spans, head_spans;
    thread_local std::vector<int64_t> n_vis;
    // spans hold [cur_lo, cur_hi] of sequence cur_seq (read once per row or tile, used per head)
    int cur_seq = -1;
    int64_t cur_lo = -1, cur_hi = -1, ks = 0, vs = 0;
    auto spans_for = [&](int seq, int64_t lo, int64_t hi) {
      if (seq == cur_seq && lo == cur_lo && hi == cur_hi) return;
      spans.clear();
      read_spans(cache_id, seq, lo, hi, &spans, &ks, &vs);
      cur_seq = seq, cur_lo = lo, cur_hi = hi;
    };
    for (int64_t i = i0; i < i1; ++i) {
      if (i >= n_parts) {  // a tile: rows [t.row0, t.row0 + t.m) of one KV head
        const Tile& t = tiles[size_t((i - n_parts) / nkv)];
        const int h = int((i - n_parts) % nkv);
        const KvRow& last = rows[size_t(t.row0 + t.m - 1)];
        const int64_t lo = first_pos(rows[size_t(t.row0)]);
        spans_for(last.seq, lo, last_visible(last));  // the most any row of the tile sees (kv_common: never decreases)
        head_spans_of(spans, h, ks, vs, &head_spans);
        qbuf.resize(size_t(t.m * group * dk));
        n_vis.resize(size_t(t.m));
        state.resize(size_t(t.m * state_n));
        for (int64_t r = 0; r < t.m; ++r) {
          const int64_t qh = (t.row0 + r) * n_heads + int64_t{h} * group;
          std::copy_n(q + qh * dk, group * dk, qbuf.data() + r * group * dk);
          n_vis[size_t(r)] = last_visible(rows[size_t(t.row0 + r)]) - lo + 1;
          attend_state_reset(state.data() + r * state_n, group, dv);
        }
        attend_fold_rows(kr, qbuf.data(), int(t.m), group, dk, dv, head_spans, n_vis.data(), l.row_bytes_k,
                         l.row_bytes_v, scale, scratch, state.data());
        for (int64_t r = 0; r < t.m; ++r)
          attend_state_finish(state.data() + r * state_n, group, dv,
                              out + ((t.row0 + r) * n_heads + int64_t{h} * group) * dv, sinks_of(h));
        continue;
      }
      const AttendPart& pt = parts[size_t(i)];
      const int64_t row = singles[size_t(pt.task / nkv)];
      const int h = int(pt.task % nkv);
      const KvRow& kr_row = rows[size_t(row)];
      const int64_t lo = first_pos(kr_row) + pt.begin;
      spans_for(kr_row.seq, lo, lo + pt.n - 1);
      head_spans_of(spans, h, ks, vs, &head_spans);
      const int64_t qh = row * n_heads + int64_t{h} * group;
      state.resize(size_t(state_n));
      float* st = pt.slot >= 0 ? partials.data() + pt.slot * state_n : state.data();
      attend_state_reset(st, group, dv);
      attend_fold(kr, q + qh * dk, group, dk, dv, head_spans, l.row_bytes_k, l.row_bytes_v, scale, scratch, st);
      if (pt.slot < 0) attend_state_finish(st, group, dv, out + qh * dv, sinks_of(h));
    }
  };
  const int64_t n_items = n_parts + int64_t(tiles.size()) * nkv;
  if (n_items >= 2 && work >= (int64_t{1} << 18)) thread_pool().parallel_for(n_items, run);
  else run(0, n_items);
  // Merge the pieces of each split task, in position order (never inside the parallel_for).
  for (size_t i = 0; i < parts.size();) {
    size_t e = i + 1;
    if (parts[i].slot >= 0) {
      float* first = partials.data() + parts[i].slot * state_n;
      for (; e < parts.size() && parts[e].task == parts[i].task; ++e)
        attend_state_merge(first, partials.data() + parts[e].slot * state_n, group, dv);
      const int64_t t = parts[i].task, qh = singles[size_t(t / nkv)] * n_heads + (t % nkv) * group;
      attend_state_finish(first, group, dv, out + qh * dv, sinks_of(t % nkv));
    }
    i = e;
  }
}

}  // namespace og::kv
