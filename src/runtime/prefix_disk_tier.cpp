// PrefixDiskTier: block files (header, MAC, payload) written by temporary
// file + rename, opened only as regular files and verified on every read,
// pruned by mtime past the byte bound; the directory's MAC key. File format:
// docs/cache.md, "The disk tier".
#include "runtime/prefix_disk_tier.h"

#include <fcntl.h>
#if __has_include(<sys/random.h>)
#include <sys/random.h>  // getentropy on glibc and macOS (the BSDs: unistd.h)
#endif
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "base/error.h"

namespace og {
namespace {

constexpr char kMagic[8] = {'O', 'G', 'K', 'V', 'B', 'L', 'K', '\0'};
constexpr uint32_t kVersion = 2;  // 1 had a plain SHA-256 of the payload: a miss, removed
constexpr const char* kKeyName = ".offgraph-kvb-key";
constexpr size_t kKeyBytes = 32;
constexpr const char* kSuffix = ".kvb";
constexpr int64_t kStaleTempSeconds = 600;  // a temporary file this old belongs to a dead writer

void put_u32(std::vector<uint8_t>* b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>* b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_bytes(std::vector<uint8_t>* b, std::span<const uint8_t> s) { b->insert(b->end(), s.begin(), s.end()); }

std::string errno_text(int e) { return std::strerror(e); }

// Writes all of `data` to fd; false with errno set on a failure.
bool write_all(int fd, const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// 64 hex digits -> 32 bytes; false for anything else.
bool parse_hex(const std::string& s, BlockHash* out) {
  auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < out->size(); ++i) {
    const int hi = digit(s[2 * i]), lo = digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

std::atomic<uint64_t>& temp_counter() {
  static std::atomic<uint64_t> n{0};
  return n;
}

uint32_t process_tag() {
  static const uint32_t tag = std::random_device{}();
  return tag;
}

bool is_block_file(const std::string& name) {
  return name.size() > 4 && name[0] != '.' && name.compare(name.size() - 4, 4, kSuffix) == 0;
}

std::string octal(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0%o", v);
  return b;
}

bool is_regular(const std::string& path, struct stat* st) { return ::lstat(path.c_str(), st) == 0 && S_ISREG(st->st_mode); }

// Opens an existing file for reading only when it is a regular file: a link
// is refused (O_NOFOLLOW), and a FIFO or device neither blocks the open
// (O_NONBLOCK) nor gets read (fstat). -1 with *why set otherwise; ENOENT
// leaves *why empty (a plain miss).
int open_regular(const std::string& path, struct stat* st, std::string* why) {
  why->clear();
  if (::lstat(path.c_str(), st) != 0) {
    if (errno != ENOENT) *why = cat("cannot stat: ", errno_text(errno));
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    *why = "not a regular file";
    return -1;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ENOENT ? "" : cat("cannot open: ", errno_text(errno));
    return -1;
  }
  if (::fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {  // replaced between lstat and open
    *why = "not a regular file";
    ::close(fd);
    return -1;
  }
  return fd;
}

// kKeyBytes from the kernel's generator (getentropy, which glibc, macOS and
// the BSDs have, unlike Linux's getrandom; else /dev/urandom).
std::vector<uint8_t> random_key(const std::string& dir) {
  static_assert(kKeyBytes <= 256, "getentropy gives at most 256 bytes a call");
  std::vector<uint8_t> key(kKeyBytes);
  if (::getentropy(key.data(), key.size()) != 0) {
    const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    OG_CHECK(fd >= 0 && read_all(fd, key.data(), key.size()), "--prefix-cache-dir ", dir,
             ": no random bytes for its key (getentropy and /dev/urandom failed)");
    ::close(fd);
  }
  return key;
}

// The directory's MAC key: read, or made on first use. Made as a temporary
// file (mode 0600, O_EXCL) hard-linked onto its name, so that replicas
// starting together agree on one key and none reads a half-written one. A key
// file anyone but this user could have written or can read is refused: a MAC
// keyed by it would prove nothing.
std::vector<uint8_t> directory_key(const std::string& dir) {
  const std::string path = cat(dir, "/", kKeyName);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    OG_CHECK(errno == ENOENT, "--prefix-cache-dir ", dir, ": cannot stat its key file ", path, ": ",
             errno_text(errno));
    const std::vector<uint8_t> key = random_key(dir);
    const std::string tmp = cat(path, ".", ::getpid(), ".", process_tag(), ".", temp_counter().fetch_add(1), ".tmp");
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    OG_CHECK(fd >= 0, "--prefix-cache-dir ", dir, ": cannot create its key file: ", errno_text(errno));
    const bool ok = ::fchmod(fd, 0600) == 0 && write_all(fd, key.data(), key.size()) && ::fsync(fd) == 0;
    const int err = errno;
    ::close(fd);
    const bool linked = ok && ::link(tmp.c_str(), path.c_str()) == 0;
    const int link_err = errno;
    ::unlink(tmp.c_str());
    OG_CHECK(ok, "--prefix-cache-dir ", dir, ": cannot write its key file: ", errno_text(err));
    if (linked) return key;
    OG_CHECK(link_err == EEXIST, "--prefix-cache-dir ", dir, ": cannot create its key file ", path, ": ",
             errno_text(link_err));
    // Another replica made it first: use theirs.
  }
  std::string why;
  const int fd = open_regular(path, &st, &why);
  OG_CHECK(fd >= 0, "--prefix-cache-dir ", dir, ": its key file ", path, ": ", why.empty() ? "vanished" : why);
  std::vector<uint8_t> key(kKeyBytes);
  const bool ok = st.st_uid == ::geteuid() && (st.st_mode & 077) == 0 && st.st_size == int64_t(kKeyBytes) &&
                  read_all(fd, key.data(), key.size());
  ::close(fd);
  OG_CHECK(ok, "--prefix-cache-dir ", dir, ": its key file ", path, " is not a ", kKeyBytes,
           "-byte file of this user with mode 0600 (owner ", st.st_uid, ", mode ", octal(st.st_mode & 07777),
           ", ", st.st_size, " bytes); remove it and a new key is made (the blocks in the directory become misses)");
  return key;
}

}  // namespace

PrefixDiskTier::PrefixDiskTier(const PrefixDiskOptions& o, const KvGeometry& g, const KvPolicy& p, int block_size,
                               std::vector<KvEvent>* events)
    : dir_(o.dir), max_bytes_(o.max_bytes), persist_(o.persist), block_size_(block_size), log_(o.log),
      events_(events), before_write_(o.before_write) {
  namespace fs = std::filesystem;
  std::error_code ec;
  OG_CHECK(fs::is_directory(dir_, ec), "--prefix-cache-dir ", dir_, ": not an existing directory");
  OG_CHECK(::access(dir_.c_str(), W_OK | X_OK) == 0, "--prefix-cache-dir ", dir_, ": not writable (",
           errno_text(errno), ")");
  OG_CHECK(max_bytes_ >= 1, "--prefix-cache-disk-bytes must be at least 1 with --prefix-cache-dir (got ", max_bytes_,
           ")");
  OG_CHECK(block_size_ >= 1, "prefix disk tier: block size ", block_size_);
  secret_ = directory_key(dir_);
  // The run key: everything a block's bytes depend on besides its tokens.
  key_header_.assign(kMagic, kMagic + 8);
  put_u32(&key_header_, kVersion);
  put_bytes(&key_header_, o.model_fingerprint);
  put_u32(&key_header_, static_cast<uint32_t>(p.dtype));
  put_u32(&key_header_, static_cast<uint32_t>(block_size_));
  put_u32(&key_header_, static_cast<uint32_t>(g.caches.size()));
  for (size_t c = 0; c < g.caches.size(); ++c) {
    const KvCacheSpec& s = g.caches[c];
    const int window = effective_window(g, p, c);
    OG_CHECK(window == 0, "--prefix-cache-dir: the disk tier needs every KV cache to keep full history, but cache ", c,
             " is a sliding-window ring (window ", window, "); leave --prefix-cache-dir out for this model");
    for (int v : {s.n_kv_heads, s.head_dim_k, s.head_dim_v, window}) put_u32(&key_header_, static_cast<uint32_t>(v));
  }
  put_u32(&key_header_, static_cast<uint32_t>(g.layer_cache.size()));
  for (size_t l = 0; l < g.layer_cache.size(); ++l)
    put_u32(&key_header_, static_cast<uint32_t>(g.layer_cache[l]) |
                              (g.layer_writes.empty() || g.layer_writes[l] ? 0u : 0x80000000u));
  const Sha256Digest key = Sha256::of(key_header_.data(), key_header_.size());
  key_hex_ = to_hex(std::span(key).first(8));
  payload_bytes_ = int64_t{block_size_} * kv_position_bytes(g, p);
  // Temporary files of writers that died long ago; then the bound.
  const auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name[0] == '.' && name.ends_with(".tmp") && e.is_regular_file(ec)) {
      std::error_code ec2;
      const auto t = fs::last_write_time(e.path(), ec2);
      if (!ec2 && now - t > std::chrono::seconds(kStaleTempSeconds)) fs::remove(e.path(), ec2);
    }
  }
  prune();
}

std::string PrefixDiskTier::path_of(const BlockHash& h) const {
  return cat(dir_, "/", to_hex(h), "-", key_hex_, kSuffix);
}

bool PrefixDiskTier::has(const BlockHash& h) const {
  struct stat st {};
  return is_regular(path_of(h), &st);
}

// The header as this run writes and expects it: key fields, the block's hash,
// its parent (flag and hash, zeros for none), tokens and payload size. The
// MAC of header and payload follows it in the file, then the payload.
std::vector<uint8_t> PrefixDiskTier::header(const BlockHash& h, const std::optional<BlockHash>& parent,
                                            std::span<const int32_t> tokens) const {
  std::vector<uint8_t> b = key_header_;
  put_bytes(&b, h);
  put_u32(&b, parent ? 1 : 0);
  put_bytes(&b, parent ? *parent : BlockHash{});
  put_u32(&b, static_cast<uint32_t>(tokens.size()));
  for (int32_t t : tokens) put_u32(&b, static_cast<uint32_t>(t));
  put_u64(&b, static_cast<uint64_t>(payload_bytes_));
  return b;
}

bool PrefixDiskTier::store(const BlockHash& h, const std::optional<BlockHash>& parent, std::span<const int32_t> tokens,
                           std::span<const uint8_t> payload) {
  OG_CHECK(int64_t(tokens.size()) == block_size_ && int64_t(payload.size()) == payload_bytes_,
           "prefix disk tier: internal error: a block of ", tokens.size(), " tokens and ", payload.size(), " bytes");
  const std::string path = path_of(h);
  if (has(h)) return true;
  std::vector<uint8_t> head = header(h, parent, tokens);
  HmacSha256 mac(secret_);
  mac.update(head.data(), head.size());
  mac.update(payload.data(), payload.size());
  put_bytes(&head, mac.finish());
  if (before_write_) before_write_();
  // A name no other writer uses: process id, a process-wide counter (several
  // tiers may share a process) and a random tag drawn once per process (a
  // reused pid of a writer that died).
  const std::string tmp = cat(dir_, "/.", to_hex(h), "-", key_hex_, ".", ::getpid(), ".", process_tag(), ".",
                              temp_counter().fetch_add(1), ".tmp");
  bool created = false;
  auto skip = [&](const std::string& what, int err) {
    if (created) ::unlink(tmp.c_str());
    ++stats_.write_skips;
    if (log_) log_(cat("prefix cache: block ", to_hex(h).substr(0, 16), " not written to disk (", what, ": ",
                       errno_text(err), ")"));
    return false;
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return skip("open", errno);
  created = true;
  bool ok = write_all(fd, head.data(), head.size());
  if (ok && fault_writes_ > 0) {
    --fault_writes_;
    ok = write_all(fd, payload.data(), payload.size() / 2);  // part of it, then the disk is full
    if (ok) ok = false, errno = fault_errno_;
  } else if (ok) {
    ok = write_all(fd, payload.data(), payload.size());
  }
  const int err = errno;
  if (!ok) {
    ::close(fd);
    return skip("write", err);
  }
  // No fsync: a file cut short by a crash fails its size or MAC and is a miss.
  if (::close(fd) != 0) return skip("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return skip("rename", errno);
  ++stats_.writes;
  stats_.bytes += int64_t(head.size()) + payload_bytes_;
  if (events_ != nullptr) {
    KvEvent ev;
    ev.type = KvEvent::Type::kBlockStored;
    ev.hashes = {h};
    ev.parent = parent;
    ev.token_ids.assign(tokens.begin(), tokens.end());
    ev.block_size = block_size_;
    ev.medium = kMediumDisk;
    events_->push_back(std::move(ev));
  }
  if (stats_.bytes > max_bytes_) prune();
  return true;
}

bool PrefixDiskTier::load(const BlockHash& h, const std::optional<BlockHash>& parent, std::span<const int32_t> tokens,
                          std::vector<uint8_t>* payload) {
  const std::string path = path_of(h);
  struct stat st {};
  std::string bad;
  const int fd = open_regular(path, &st, &bad);
  if (fd < 0) {
    if (!bad.empty()) remove_bad(path, h, bad);
    return false;
  }
  bad = check_file(fd, header(h, parent, tokens), payload);
  if (bad.empty()) ::futimens(fd, nullptr);  // mtime = now: recently used (the pruning order)
  ::close(fd);
  if (!bad.empty()) {
    remove_bad(path, h, bad);
    return false;
  }
  ++stats_.reads;
  return true;
}

// Why the open file fd is not block `want` (its expected header), or "" with
// its payload in *payload. The size is checked before anything is read.
std::string PrefixDiskTier::check_file(int fd, const std::vector<uint8_t>& want, std::vector<uint8_t>* payload) const {
  const int64_t size = int64_t(want.size()) + 32 + payload_bytes_;
  struct stat st {};
  std::vector<uint8_t> head(want.size() + 32);
  if (::fstat(fd, &st) != 0) return cat("cannot stat: ", errno_text(errno));
  if (st.st_size != size) return cat(st.st_size, " bytes, not ", size);
  if (!read_all(fd, head.data(), head.size())) return "cannot read its header";
  if (std::memcmp(head.data(), kMagic, 8) != 0) return "not a block file";
  if (!std::equal(want.begin(), want.end(), head.begin()))
    return "its header names another version, model, cache layout, block or token ids";
  payload->resize(size_t(payload_bytes_));
  if (!read_all(fd, payload->data(), payload->size())) return "cannot read its payload";
  HmacSha256 mac(secret_);
  mac.update(want.data(), want.size());
  mac.update(payload->data(), payload->size());
  if (!digests_equal(mac.finish(), std::span(head).last(32)))
    return "MAC mismatch (corrupt, or not written with this directory's key)";
  return "";
}

void PrefixDiskTier::removed_event(const BlockHash& h) {
  if (events_ == nullptr) return;
  KvEvent ev;
  ev.type = KvEvent::Type::kBlockRemoved;
  ev.hashes = {h};
  ev.medium = kMediumDisk;
  events_->push_back(std::move(ev));
}

void PrefixDiskTier::remove_bad(const std::string& path, const BlockHash& h, const std::string& why) {
  ++stats_.bad_files;
  struct stat st {};
  if (is_regular(path, &st)) stats_.bytes -= st.st_size;
  ::unlink(path.c_str());
  if (log_) log_(cat("prefix cache: removed bad disk block ", path, ": ", why));
  removed_event(h);
}

void PrefixDiskTier::prune() {
  struct File {
    std::string name;
    int64_t size;
    timespec mtime;
  };
  std::vector<File> files;
  int64_t total = 0;
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (!is_block_file(name)) continue;
    struct stat st {};
    if (!is_regular(e.path().string(), &st)) continue;  // gone meanwhile, or not a file this tier made
    files.push_back({name, int64_t(st.st_size), st.st_mtim});
    total += st.st_size;
  }
  if (total > max_bytes_) {
    std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
      return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
    });
    const int64_t target = max_bytes_ - max_bytes_ / 10;
    for (const File& f : files) {
      if (total <= target) break;
      if (::unlink(cat(dir_, "/", f.name).c_str()) != 0) continue;  // another replica pruned it first
      total -= f.size;
      ++stats_.pruned;
      // Only this run's blocks are announced (another model's are not ours to report).
      const std::string tail = cat("-", key_hex_, kSuffix);
      BlockHash h{};
      if (f.name.size() == 64 + tail.size() && f.name.ends_with(tail) && parse_hex(f.name.substr(0, 64), &h))
        removed_event(h);
    }
  }
  stats_.bytes = total;
}

}  // namespace og
