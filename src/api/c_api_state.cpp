// og_session_save / og_session_load (offgraph.h): a session's state in one
// versioned file, so that a loaded session continues exactly as the saved one
// would. The file holds the model's fingerprint (runtime/model_fingerprint.h),
// the history, the cache's positions as the cache kinds export them (the
// prefix cache's disk tier uses the same bytes), the undo marks and the last
// logits, and ends with a checksum over everything before it:
//
//   "OGSESSN\n"  u32 version (1)  u8[32] model fingerprint  u32 n_vocab
//   str kv_dtype  u64 n_history  i32[n_history]  u64 n_cached
//   u64 n_bytes  u8[n_bytes] (positions [0, n_cached) of the cache)
//   u64 n_marks  i64[n_marks]  u8 have_logits  [f32[n_vocab]]  u64 fnv1a-64
//
// Integers are little-endian (as every platform offgraph builds for). Sampling
// has no state between turns here (each turn builds its sampler from its
// options and seed), so there is none to save.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "api/c_api_session.h"
#include "runtime/model_fingerprint.h"

namespace og::capi {
namespace {

constexpr char kMagic[8] = {'O', 'G', 'S', 'E', 'S', 'S', 'N', '\n'};
constexpr uint32_t kVersion = 1;

uint64_t fnv1a(const std::string& b) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
  return h;
}

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    b_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void bytes(const void* p, size_t n) { b_.append(static_cast<const char*>(p), n); }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  std::string& buffer() { return b_; }

 private:
  std::string b_;
};

// Reads the body (checksum already checked); any short read is a truncated file.
class Reader {
 public:
  Reader(const std::string& b, const std::string& path) : b_(b), path_(path) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const char* take(uint64_t n) {
    if (n > b_.size() - at_) bad("is truncated or corrupt (a length runs past its end)");
    const char* p = b_.data() + at_;
    at_ += n;
    return p;
  }
  // A count of `each`-byte items that must fit in what is left.
  uint64_t count(uint64_t each) {
    const uint64_t n = get<uint64_t>();
    if (each > 0 && n > (b_.size() - at_) / each) bad("is truncated or corrupt (a count runs past its end)");
    return n;
  }
  std::string str() {
    const uint64_t n = count(1);
    return std::string(take(n), n);
  }
  bool done() const { return at_ == b_.size(); }
  [[noreturn]] void bad(const char* what) const {
    api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path_, " ", what);
  }

 private:
  const std::string& b_;
  const std::string& path_;
  size_t at_ = 0;
};

Sha256Digest fingerprint_of(const ModelCore& core) { return model_fingerprint(core.run.model().source_path()); }

std::string state_of(og_session* s) {
  const Session& ss = *s->s;
  const int64_t cached = ss.cached();
  std::vector<uint8_t> kv;
  if (cached > 0) {
    const KvResult r = ss.cache().export_positions(ss.seq(), 0, cached, &kv);
    if (!r.ok())
      api_fail(OG_ERR_STATE, "cannot save the session: its cache no longer holds every position (", r.message,
               "); a windowed cache that has dropped positions cannot be saved");
  }
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.put<uint32_t>(kVersion);
  const Sha256Digest fp = fingerprint_of(*s->core);
  w.bytes(fp.data(), fp.size());
  w.put<uint32_t>(static_cast<uint32_t>(s->core->n_vocab()));
  w.str(s->setup.storage_dtype);
  w.put<uint64_t>(ss.history().size());
  w.bytes(ss.history().data(), ss.history().size() * sizeof(int32_t));
  w.put<uint64_t>(static_cast<uint64_t>(cached));
  w.put<uint64_t>(kv.size());
  w.bytes(kv.data(), kv.size());
  w.put<uint64_t>(s->undo_marks.size());
  w.bytes(s->undo_marks.data(), s->undo_marks.size() * sizeof(int64_t));
  std::span<const float> logits = s->forked_logits;
  if (logits.empty() && s->have_logits) logits = ss.logits();
  const bool have = logits.size() == static_cast<size_t>(s->core->n_vocab());
  w.put<uint8_t>(have ? 1 : 0);
  if (have) w.bytes(logits.data(), logits.size() * sizeof(float));
  w.put<uint64_t>(fnv1a(w.buffer()));
  return std::move(w.buffer());
}

void write_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) api_fail(OG_ERR_INVALID_ARGUMENT, path, ": cannot write (", std::strerror(errno), ")");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      api_fail(OG_ERR_RUNTIME, path, ": write failed (", std::strerror(errno), ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // a reader never sees half a file
  if (ec) {
    std::remove(tmp.c_str());
    api_fail(OG_ERR_RUNTIME, path, ": cannot rename the written file into place (", ec.message(), ")");
  }
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) api_fail(OG_ERR_INVALID_ARGUMENT, path, ": no such file");
  std::ifstream f(path, std::ios::binary);
  std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) api_fail(OG_ERR_INVALID_ARGUMENT, path, ": cannot read");
  return b;
}

// Checks the whole file and replaces the session's state with it.
void load_into(og_session* s, const std::string& path, const std::string& file) {
  const size_t head = sizeof kMagic + sizeof(uint32_t);
  Reader whole(file, path);
  if (file.size() < head || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    whole.bad("is not an offgraph session file (no OGSESSN header)");
  uint32_t version;
  std::memcpy(&version, file.data() + sizeof kMagic, sizeof version);
  if (version != kVersion)
    api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path, " has version ", version,
             "; this library reads version ", kVersion);
  if (file.size() < head + sizeof(uint64_t)) whole.bad("is truncated");
  const std::string body = file.substr(0, file.size() - sizeof(uint64_t));
  uint64_t sum;
  std::memcpy(&sum, file.data() + body.size(), sizeof sum);
  if (sum != fnv1a(body)) whole.bad("is truncated or corrupt (its checksum does not match)");
  Reader r(body, path);
  r.take(head);
  Sha256Digest fp;
  std::memcpy(fp.data(), r.take(fp.size()), fp.size());
  if (fp != fingerprint_of(*s->core))
    api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path, " was saved from another model (its fingerprint is not ",
             s->core->run.model().source_path(), "'s)");
  if (r.get<uint32_t>() != static_cast<uint32_t>(s->core->n_vocab())) r.bad("has another vocabulary size");
  const std::string dtype = r.str();
  if (dtype != s->setup.storage_dtype)
    api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path, " holds a cache of kv_dtype ", dtype,
             ", this session stores ", s->setup.storage_dtype, " (open it with kv_dtype \"", dtype, "\")");
  std::vector<int32_t> history(r.count(sizeof(int32_t)));
  std::memcpy(history.data(), r.take(history.size() * sizeof(int32_t)), history.size() * sizeof(int32_t));
  check_ids(history.data(), history.size(), s->core->n_vocab(), "the session file's history");
  const uint64_t cached = r.get<uint64_t>();
  const uint64_t n_bytes = r.count(1);
  const std::span<const uint8_t> kv(reinterpret_cast<const uint8_t*>(r.take(n_bytes)), n_bytes);
  std::vector<int64_t> marks(r.count(sizeof(int64_t)));
  std::memcpy(marks.data(), r.take(marks.size() * sizeof(int64_t)), marks.size() * sizeof(int64_t));
  std::vector<float> logits;
  if (r.get<uint8_t>()) {
    logits.resize(s->core->n_vocab());
    std::memcpy(logits.data(), r.take(logits.size() * sizeof(float)), logits.size() * sizeof(float));
  }
  if (!r.done()) r.bad("is corrupt (bytes after its last field)");
  if (cached > history.size()) r.bad("is corrupt (more cached positions than history)");
  for (size_t i = 0; i < marks.size(); ++i)
    if (marks[i] < 0 || marks[i] > static_cast<int64_t>(history.size()) || (i > 0 && marks[i] < marks[i - 1]))
      r.bad("is corrupt (an undo mark outside the history)");
  if (static_cast<int64_t>(history.size()) > s->policy.max_capacity)
    api_fail(OG_ERR_CAPACITY, "the session file ", path, " holds ", history.size(), " tokens, more than this session's ",
             s->policy.max_capacity, " positions (raise kv_max_capacity)");
  const int64_t per = kv_position_bytes(s->core->run.model().kv_geometry(), s->policy);
  if (per <= 0 || n_bytes != cached * static_cast<uint64_t>(per))
    r.bad("is corrupt (its cache bytes do not match the model's cache geometry)");
  // Everything checked: build the new state, then swap it in.
  auto cache = cache_of(s->setup, s->core->run.model(), s->policy,
                        "og_session_options.kv_max_capacity, kv_initial_capacity, kv_windows or prefill_chunk_size");
  if (cache->length(0) < 0) {
    const KvResult a = cache->add_sequence(0);
    if (!a.ok()) api_fail(OG_ERR_RUNTIME, "cannot load the session: ", a.message);
  }
  if (cached > 0) {
    const KvResult imp = cache->import_positions(0, kv);
    if (!imp.ok()) api_fail(OG_ERR_RUNTIME, "cannot load the session's cache: ", imp.message);
  }
  auto session = std::make_unique<Session>(
      *s->core->engine, *cache, 0, s->core->tok(),
      std::vector<int32_t>(history.begin(), history.begin() + static_cast<int64_t>(cached)));
  session->append_pending(std::span<const int32_t>(history).subspan(cached));
  s->s = std::move(session);  // the old session goes first, then the cache it used
  s->loaded_cache = std::move(cache);
  s->undo_marks = std::move(marks);
  s->have_logits = false;
  s->forked_logits = std::move(logits);  // og_session_logits hands these out until the next change
}

}  // namespace
}  // namespace og::capi

using namespace og;
using namespace og::capi;

extern "C" {

og_status og_session_save(og_session* session, const char* path) {
  return guarded([&] {
    SessionUse use(session);
    need(path, "path");
    if (!*path) api_fail(OG_ERR_INVALID_ARGUMENT, "path is empty");
    no_stream(session);
    // The file holds token ids: an image's positions would come back as its
    // placeholder ids, a silently different prompt.
    if (!session->s->images().empty())
      api_fail(OG_ERR_STATE, "the session holds ", session->s->images().size(),
               " image(s); session files do not store images yet (og_session_rewind before the first one, or "
               "og_session_reset)");
    write_file(path, state_of(session));
  });
}

og_status og_session_load(og_session* session, const char* path) {
  return guarded([&] {
    SessionUse use(session);
    need(path, "path");
    if (!*path) api_fail(OG_ERR_INVALID_ARGUMENT, "path is empty");
    no_stream(session);
    load_into(session, path, read_file(path));
  });
}

}  // extern "C"
