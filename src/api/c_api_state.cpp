// og_session_save / og_session_load (offgraph.h): a session's state in one
// versioned file, so that a loaded session continues exactly as the saved one
// would. The file holds the model's fingerprint (runtime/model_fingerprint.h),
// the history, the cache's positions as the cache kinds export them (the
// prefix cache's disk tier uses the same bytes), the undo marks and the last
// logits, and ends with a checksum over everything before it:
//
//   "OGSESSN\n"  u32 version (2)  u8[32] model fingerprint  u32 n_vocab
//   str kv_dtype  u64 n_history  i32[n_history]
//   u64 n_images  [u8[32] tower fingerprint  u64 width
//                  (i64 begin  i64 length  u8[32] hash  u8 bidirectional
//                   f32[length * width] rows) per image]
//   u64 n_cached  u64 n_bytes  u8[n_bytes] (positions [0, n_cached) of the cache)
//   u64 n_marks  i64[n_marks]  u8 have_logits  [f32[n_vocab]]  u64 fnv1a-64
//
// An image is kept as session history keeps it (its span, the hash that
// names it, its rows), so that a pending image is forwarded from its rows and
// a rewind or ring recompute across it stays exact; history holds its
// placeholder ids. The tower's fingerprint (the mmproj file's or the HF
// directory's, model_fingerprint) is there only when images are: a file with
// images loads only beside the tower that encoded them, since a later chat
// turn re-encodes the same image through the loaded tower and keeps the
// saved rows where their hashes match. Version 1 files (before images: the
// same fields without n_images) still load, as sessions without images;
// every other version is refused by number.
//
// Integers are little-endian (as every platform offgraph builds for). Sampling
// has no state between turns here (each turn builds its sampler from its
// options and seed), so there is none to save.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "api/c_api_session.h"
#include "runtime/model_fingerprint.h"
#include "runtime/vision_model.h"

namespace og::capi {
namespace {

constexpr char kMagic[8] = {'O', 'G', 'S', 'E', 'S', 'S', 'N', '\n'};
constexpr uint32_t kVersion = 2;
constexpr uint32_t kVersionWithoutImages = 1;  // still read: no n_images field

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

const VisionModel* tower_of(const ModelCore& core) { return core.run.loaded.vision.get(); }

void put_images(Writer& w, const og_session& s) {
  const std::vector<SessionImage>& images = s.s->images();
  w.put<uint64_t>(images.size());
  if (images.empty()) return;
  const VisionModel* v = tower_of(*s.core);
  // Images come only through the model's tower (og_session_append_image, a chat turn).
  if (v == nullptr) api_fail(OG_ERR_STATE, "cannot save the session: it holds images but its model has no vision tower");
  const Sha256Digest fp = model_fingerprint(v->path);
  w.bytes(fp.data(), fp.size());
  w.put<uint64_t>(static_cast<uint64_t>(v->width()));
  for (const SessionImage& im : images) {
    if (im.embeddings.size() != static_cast<size_t>(im.span.length * v->width()))
      api_fail(OG_ERR_STATE, "cannot save the session: the image at position ", im.span.begin,
               " has rows of another width than the model's tower");
    w.put<int64_t>(im.span.begin);
    w.put<int64_t>(im.span.length);
    w.bytes(im.span.hash.data(), im.span.hash.size());
    w.put<uint8_t>(im.bidirectional ? 1 : 0);
    w.bytes(im.embeddings.data(), im.embeddings.size() * sizeof(float));
  }
}

// The images section (put_images), checked against the history and the
// model's tower; nothing is changed.
std::vector<SessionImage> get_images(Reader& r, const og_session& s, const std::string& path,
                                     const std::vector<int32_t>& history) {
  constexpr uint64_t kLeast = 2 * sizeof(int64_t) + sizeof(Sha256Digest) + 1;  // an image's fixed fields
  const uint64_t n = r.count(kLeast);
  if (n == 0) return {};
  Sha256Digest fp;
  std::memcpy(fp.data(), r.take(fp.size()), fp.size());
  const uint64_t width = r.get<uint64_t>();
  const VisionModel* v = tower_of(*s.core);
  if (v == nullptr)
    api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path, " holds ", n,
             " image(s) but this model has no vision tower (open it with the mmproj that encoded them)");
  if (fp != model_fingerprint(v->path))
    api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path, " was saved with another vision tower (its fingerprint is not ",
             v->path, "'s)");
  if (width != static_cast<uint64_t>(v->width())) r.bad("is corrupt (its image rows are not the tower's width)");
  std::vector<SessionImage> images(n);
  int64_t at = 0;  // the end of the image before
  const int64_t size = static_cast<int64_t>(history.size());
  for (SessionImage& im : images) {
    im.span.begin = r.get<int64_t>();
    im.span.length = r.get<int64_t>();
    if (im.span.begin < at || im.span.length < 1 || im.span.length > size - im.span.begin)
      r.bad("is corrupt (an image outside the history or over another)");
    std::memcpy(im.span.hash.data(), r.take(im.span.hash.size()), im.span.hash.size());
    const uint8_t bidirectional = r.get<uint8_t>();
    if (bidirectional > 1) r.bad("is corrupt (an image's bidirectional flag is not 0 or 1)");
    im.bidirectional = bidirectional == 1;
    const uint64_t values = static_cast<uint64_t>(im.span.length) * width;
    const char* rows = r.take(values * sizeof(float));  // length <= history and width the tower's: no overflow
    im.embeddings.resize(values);
    std::memcpy(im.embeddings.data(), rows, values * sizeof(float));
    for (int64_t p = im.span.begin; p < im.span.end(); ++p)
      if (history[p] != history[im.span.begin]) r.bad("is corrupt (an image's positions hold different ids)");
    if (im.span.length > s.policy.max_write)
      api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path, " holds an image of ", im.span.length,
               " positions, more than this session forwards in one step (", s.policy.max_write,
               "; raise prefill_chunk_size)");
    at = im.span.end();
  }
  return images;
}

// A session over `cache`, which holds history[0, cached): the images inside
// that prefix are its own, the rest of the history (text and images) is
// appended pending, to be forwarded by the next prefill or turn.
std::unique_ptr<Session> session_of(og_session* s, KvCache& cache, const std::vector<int32_t>& history, int64_t cached,
                                    std::vector<SessionImage> images) {
  const auto first_pending =
      std::find_if(images.begin(), images.end(), [&](const SessionImage& im) { return im.span.end() > cached; });
  std::vector<SessionImage> pending(std::make_move_iterator(first_pending), std::make_move_iterator(images.end()));
  images.erase(first_pending, images.end());
  auto session = std::make_unique<Session>(*s->core->engine, cache, 0, s->core->tok(),
                                           std::vector<int32_t>(history.begin(), history.begin() + cached),
                                           std::move(images));
  const std::span<const int32_t> ids(history);
  int64_t at = cached;
  for (const SessionImage& im : pending) {
    session->append_pending(ids.subspan(at, im.span.begin - at));
    const int64_t width = static_cast<int64_t>(im.embeddings.size()) / im.span.length;
    session->append_image(im.embeddings, width, im.span.hash, history[im.span.begin], im.bidirectional);
    at = im.span.end();
  }
  session->append_pending(ids.subspan(at));
  return session;
}

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
  put_images(w, *s);
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
  if (version != kVersion && version != kVersionWithoutImages)
    api_fail(OG_ERR_INVALID_ARGUMENT, "the session file ", path, " has version ", version,
             "; this library reads versions ", kVersionWithoutImages, " and ", kVersion);
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
  std::vector<SessionImage> images;
  if (version != kVersionWithoutImages) images = get_images(r, *s, path, history);
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
  for (const SessionImage& im : images)  // neither the cache nor an undo mark ends inside an image
    if (im.span.begin < static_cast<int64_t>(cached) && static_cast<int64_t>(cached) < im.span.end())
      r.bad("is corrupt (its cached positions end inside an image)");
    else if (std::any_of(marks.begin(), marks.end(), [&](int64_t m) { return im.span.begin < m && m < im.span.end(); }))
      r.bad("is corrupt (an undo mark inside an image)");
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
  auto session = session_of(s, *cache, history, static_cast<int64_t>(cached), std::move(images));
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
