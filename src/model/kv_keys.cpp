// offgraph.kv.* keys: write, read, compare (see kv_keys.h).
#include "model/kv_keys.h"

#include "base/error.h"

namespace og {
namespace {

GgufValue u32_array(const std::vector<int64_t>& v) {
  std::vector<GgufValue> a;
  for (int64_t x : v) a.push_back(GgufValue::make_u32(static_cast<uint32_t>(x)));
  return GgufValue::make_array(GgufType::U32, std::move(a));
}

std::vector<int64_t> int_array(const GgufFile& f, const char* key, size_t n) {
  const GgufValue* v = f.get(key);
  OG_CHECK(v != nullptr, f.source_name(), ": missing key ", key, " (the file has ", kKvCacheCount, ")");
  OG_CHECK(v->type == GgufType::ARRAY, f.source_name(), ": ", key, " must be an array of integers");
  std::vector<int64_t> a = *f.get_int_array(key);
  OG_CHECK(a.size() == n, f.source_name(), ": ", key, " has ", a.size(), " entries, expected ", n);
  for (int64_t x : a) OG_CHECK(x >= 0 && x <= INT32_MAX, f.source_name(), ": ", key, " holds ", x, ", out of range");
  return a;
}

}  // namespace

void write_kv_geometry_keys(const KvGeometry& g, int64_t prefill_chunk_size, GgufWriter& w) {
  std::vector<int64_t> heads, k, v, win, layers;
  for (const KvCacheSpec& c : g.caches) {
    heads.push_back(c.n_kv_heads);
    k.push_back(c.head_dim_k);
    v.push_back(c.head_dim_v);
    win.push_back(c.window);
  }
  for (int c : g.layer_cache) layers.push_back(c);
  w.set(kKvCacheCount, GgufValue::make_u32(static_cast<uint32_t>(g.caches.size())));
  w.set(kKvHeadCountKv, u32_array(heads));
  w.set(kKvKeyLength, u32_array(k));
  w.set(kKvValueLength, u32_array(v));
  w.set(kKvSlidingWindow, u32_array(win));
  w.set(kKvLayerCache, u32_array(layers));
  OG_CHECK(prefill_chunk_size > 0 && prefill_chunk_size <= INT32_MAX, "prefill chunk size ", prefill_chunk_size,
           " is out of range");
  w.set(kKvPrefillChunkSize, GgufValue::make_u32(static_cast<uint32_t>(prefill_chunk_size)));
}

std::optional<KvGeometry> read_kv_geometry_keys(const GgufFile& f) {
  const std::optional<int64_t> n = f.get_int(kKvCacheCount);
  if (!n) return std::nullopt;
  OG_CHECK(*n > 0 && *n <= 1 << 16, f.source_name(), ": ", kKvCacheCount, " = ", *n, " is out of range");
  const size_t nc = static_cast<size_t>(*n);
  KvGeometry g;
  const std::vector<int64_t> heads = int_array(f, kKvHeadCountKv, nc), k = int_array(f, kKvKeyLength, nc),
                             v = int_array(f, kKvValueLength, nc), win = int_array(f, kKvSlidingWindow, nc);
  for (size_t i = 0; i < nc; ++i)
    g.caches.push_back(KvCacheSpec{static_cast<int>(heads[i]), static_cast<int>(k[i]), static_cast<int>(v[i]),
                                   static_cast<int>(win[i])});
  const GgufValue* lc = f.get(kKvLayerCache);
  OG_CHECK(lc != nullptr && lc->type == GgufType::ARRAY, f.source_name(), ": missing or malformed key ",
           kKvLayerCache);
  std::vector<bool> seen(nc, false);
  for (int64_t c : int_array(f, kKvLayerCache, lc->arr.size())) {
    OG_CHECK(c < *n, f.source_name(), ": ", kKvLayerCache, " names cache ", c, " of ", *n);
    g.layer_cache.push_back(static_cast<int>(c));
    g.layer_writes.push_back(!seen[static_cast<size_t>(c)]);  // the first layer of a cache owns it
    seen[static_cast<size_t>(c)] = true;
  }
  return g;
}

std::optional<int64_t> read_prefill_chunk_size(const GgufFile& f) {
  const std::optional<int64_t> n = f.get_int(kKvPrefillChunkSize);
  if (n) OG_CHECK(*n > 0 && *n <= INT32_MAX, f.source_name(), ": ", kKvPrefillChunkSize, " = ", *n, " must be positive");
  return n;
}

void check_kv_geometry(const KvGeometry& s, const KvGeometry& d, const std::string& file) {
  auto bad = [&](const std::string& key, int64_t stored, int64_t derived) {
    fail(file, ": ", key, " = ", stored, " but the architecture keys give ", derived,
         " (the file's cache geometry contradicts its architecture)");
  };
  if (s.caches.size() != d.caches.size()) bad(kKvCacheCount, s.caches.size(), d.caches.size());
  for (size_t i = 0; i < s.caches.size(); ++i) {
    const KvCacheSpec &a = s.caches[i], &b = d.caches[i];
    const std::string at = cat("[", i, "]");
    if (a.n_kv_heads != b.n_kv_heads) bad(kKvHeadCountKv + at, a.n_kv_heads, b.n_kv_heads);
    if (a.head_dim_k != b.head_dim_k) bad(kKvKeyLength + at, a.head_dim_k, b.head_dim_k);
    if (a.head_dim_v != b.head_dim_v) bad(kKvValueLength + at, a.head_dim_v, b.head_dim_v);
    if (a.window != b.window) bad(kKvSlidingWindow + at, a.window, b.window);
  }
  if (s.layer_cache.size() != d.layer_cache.size())
    fail(file, ": ", kKvLayerCache, " has ", s.layer_cache.size(), " entries but the model has ",
         d.layer_cache.size(), " layers");
  for (size_t l = 0; l < s.layer_cache.size(); ++l)
    if (s.layer_cache[l] != d.layer_cache[l]) bad(cat(kKvLayerCache, "[", l, "]"), s.layer_cache[l], d.layer_cache[l]);
}

}  // namespace og
