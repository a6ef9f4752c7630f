// The prefix cache's disk tier as a store: round trip, a restart (a new tier
// over the same directory), least-recently-used pruning past the byte bound,
// two writers of one block at once, and the bad files that must be misses and
// be removed: truncated, a flipped byte, another model's file, a file made
// with another directory's key (planted), a FIFO, a device, a symlink (even to
// a genuine block) - each read under a time guard, as a FIFO used to block it
// forever; a full disk (an injected ENOSPC in the middle of a write: no tmpfs
// of a chosen size is at hand in CI) is a logged skip. The directory's key
// file: made 0600 on first use, shared by tiers over one directory, refused
// when others could read or write it. Bad options are one-line errors.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "base/error.h"
#include "runtime/prefix_disk_tier.h"
#include "temp_dir.h"

namespace og {
namespace {

namespace fs = std::filesystem;

KvGeometry geometry(int window = 0) {
  KvGeometry g;
  g.caches = {{2, 8, 8, 0}, {1, 8, 8, window}};
  g.layer_cache = {0, 1};
  g.layer_writes = {true, true};
  return g;
}

KvPolicy policy() {
  KvPolicy p;
  p.dtype = KvDType::F16;
  return p;
}

constexpr int kBlock = 4;

PrefixDiskOptions options(const std::string& dir, int64_t bytes = int64_t{1} << 20, uint8_t model = 1) {
  PrefixDiskOptions o;
  o.dir = dir;
  o.max_bytes = bytes;
  o.model_fingerprint.fill(model);
  return o;
}

BlockHash hash_of(int i) {
  BlockHash h{};
  h[0] = static_cast<uint8_t>(i), h[31] = 0xab;
  return h;
}

std::vector<int32_t> tokens_of(int i) { return {i, i + 1, i + 2, i + 3}; }

std::vector<uint8_t> payload_of(const PrefixDiskTier& t, int i) {
  std::vector<uint8_t> p(size_t(t.payload_bytes()));
  for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<uint8_t>(j * 7 + i);
  return p;
}

bool load(PrefixDiskTier& t, int i, std::vector<uint8_t>* out) {
  return t.load(hash_of(i), i > 0 ? std::optional(hash_of(i - 1)) : std::nullopt, tokens_of(i), out);
}

bool store(PrefixDiskTier& t, int i) {
  return t.store(hash_of(i), i > 0 ? std::optional(hash_of(i - 1)) : std::nullopt, tokens_of(i), payload_of(t, i));
}

int64_t file_size(const std::string& p) { return int64_t(fs::file_size(p)); }

// Files in dir besides its key.
size_t files_in(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename() != ".offgraph-kvb-key";
  return n;
}

TEST(PrefixDiskTier, RoundTripAndRestart) {
  test::TempDir dir;
  std::vector<KvEvent> events;
  {
    PrefixDiskTier t(options(dir.path()), geometry(), policy(), kBlock, &events);
    EXPECT_EQ(t.payload_bytes(), kBlock * (2 * 2 * 16 + 2 * 16));
    EXPECT_FALSE(t.has(hash_of(0)));
    std::vector<uint8_t> got;
    EXPECT_FALSE(load(t, 0, &got));  // a plain miss: nothing removed
    EXPECT_EQ(t.stats().bad_files, 0);
    ASSERT_TRUE(store(t, 0));
    ASSERT_TRUE(store(t, 1));
    EXPECT_TRUE(t.has(hash_of(1)));
    ASSERT_TRUE(load(t, 1, &got));
    EXPECT_EQ(got, payload_of(t, 1));
    EXPECT_EQ(t.stats().writes, 2);
    EXPECT_EQ(t.stats().reads, 1);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1].type, KvEvent::Type::kBlockStored);
    EXPECT_EQ(events[1].medium, kMediumDisk);
    EXPECT_EQ(events[1].hashes, std::vector<BlockHash>{hash_of(1)});
    EXPECT_EQ(events[1].parent, hash_of(0));
    EXPECT_FALSE(events[0].parent.has_value());
    EXPECT_EQ(events[1].token_ids, tokens_of(1));
    EXPECT_EQ(events[1].block_size, kBlock);
    // The file is named by the block's hash.
    EXPECT_NE(t.path_of(hash_of(1)).find(to_hex(hash_of(1))), std::string::npos);
  }
  // A new process over the same directory finds the blocks.
  PrefixDiskTier t(options(dir.path()), geometry(), policy(), kBlock, nullptr);
  std::vector<uint8_t> got;
  ASSERT_TRUE(load(t, 0, &got));
  EXPECT_EQ(got, payload_of(t, 0));
  EXPECT_EQ(t.stats().bytes, 2 * file_size(t.path_of(hash_of(0))));
}

TEST(PrefixDiskTier, LeastRecentlyUsedFilesGoPastTheBound) {
  test::TempDir dir;
  int64_t one = 0;
  {
    PrefixDiskTier probe(options(dir.path()), geometry(), policy(), kBlock, nullptr);
    ASSERT_TRUE(store(probe, 9));
    one = file_size(probe.path_of(hash_of(9)));
    fs::remove(probe.path_of(hash_of(9)));
  }
  std::vector<KvEvent> events;
  PrefixDiskTier t(options(dir.path(), 3 * one + one / 2), geometry(), policy(), kBlock, &events);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store(t, i));
  // Ages 30, 20, 10 s (mtime order, whatever the clock's granularity), then block 0 is read: the newest.
  const timespec now{::time(nullptr), 0};
  for (int i = 0; i < 3; ++i) {
    const timespec ts[2] = {now, {now.tv_sec - 30 + 10 * i, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, t.path_of(hash_of(i)).c_str(), ts, 0), 0);
  }
  std::vector<uint8_t> got;
  ASSERT_TRUE(load(t, 0, &got));
  events.clear();
  ASSERT_TRUE(store(t, 3));  // 4 files > 3.5: down to 90 % of the bound, least recently used first
  EXPECT_FALSE(t.has(hash_of(1)));
  EXPECT_TRUE(t.has(hash_of(0)));
  EXPECT_TRUE(t.has(hash_of(2)));
  EXPECT_TRUE(t.has(hash_of(3)));
  EXPECT_EQ(t.stats().pruned, 1);
  EXPECT_EQ(t.stats().bytes, 3 * one);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].type, KvEvent::Type::kBlockRemoved);
  EXPECT_EQ(events[1].medium, kMediumDisk);
  EXPECT_EQ(events[1].hashes, std::vector<BlockHash>{hash_of(1)});
  // A new tier over an over-full directory prunes at start. Block 3 is made
  // the newest by a clear margin: file times are coarse (a kernel tick), and
  // its write and block 0's read may share one.
  const timespec later[2] = {now, {now.tv_sec + 5, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, t.path_of(hash_of(3)).c_str(), later, 0), 0);
  PrefixDiskTier small(options(dir.path(), one + one / 2), geometry(), policy(), kBlock, nullptr);
  EXPECT_EQ(small.stats().bytes, one);
  EXPECT_TRUE(small.has(hash_of(3)));
}

TEST(PrefixDiskTier, TwoWritersOfOneBlockAtOnce) {
  test::TempDir dir;
  PrefixDiskTier a(options(dir.path()), geometry(), policy(), kBlock, nullptr);
  PrefixDiskTier b(options(dir.path()), geometry(), policy(), kBlock, nullptr);
  for (int round = 0; round < 20; ++round) {
    fs::remove(a.path_of(hash_of(5)));
    std::atomic<int> ready{0};
    bool ok_a = false, ok_b = false;
    auto writer = [&](PrefixDiskTier& t, bool* ok) {
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      *ok = store(t, 5);
    };
    std::thread ta(writer, std::ref(a), &ok_a), tb(writer, std::ref(b), &ok_b);
    ta.join();
    tb.join();
    EXPECT_TRUE(ok_a && ok_b);
    std::vector<uint8_t> got;
    ASSERT_TRUE(load(b, 5, &got));
    EXPECT_EQ(got, payload_of(b, 5));
    EXPECT_EQ(files_in(dir.path()), 1u);  // no temporary file left behind
  }
}

// A stored block whose file is then damaged by `damage` is a miss, is removed
// and is announced as removed from disk.
void expect_bad(const std::function<void(const std::string&)>& damage) {
  test::TempDir dir;
  std::vector<KvEvent> events;
  std::string logged;
  PrefixDiskOptions o = options(dir.path());
  o.log = [&](const std::string& s) { logged = s; };
  PrefixDiskTier t(o, geometry(), policy(), kBlock, &events);
  ASSERT_TRUE(store(t, 2));
  damage(t.path_of(hash_of(2)));
  std::vector<uint8_t> got;
  EXPECT_FALSE(load(t, 2, &got));
  EXPECT_FALSE(fs::exists(t.path_of(hash_of(2))));
  EXPECT_EQ(t.stats().bad_files, 1);
  EXPECT_NE(logged.find("removed bad disk block"), std::string::npos) << logged;
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, KvEvent::Type::kBlockRemoved);
  EXPECT_EQ(events.back().medium, kMediumDisk);
  EXPECT_FALSE(load(t, 2, &got));  // then a plain miss
  EXPECT_EQ(t.stats().bad_files, 1);
}

void flip(const std::string& path, int64_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(at);
  f.write(&c, 1);
}

TEST(PrefixDiskTier, TruncatedFileIsAMissAndRemoved) {
  expect_bad([](const std::string& p) { fs::resize_file(p, fs::file_size(p) / 2); });
  expect_bad([](const std::string& p) { fs::resize_file(p, 0); });
}

TEST(PrefixDiskTier, FlippedByteIsAMissAndRemoved) {
  expect_bad([](const std::string& p) { flip(p, int64_t(fs::file_size(p)) - 3); });  // payload
  expect_bad([](const std::string& p) { flip(p, 2); });                                // magic
  expect_bad([](const std::string& p) { flip(p, int64_t(fs::file_size(p)) - 200); }); // payload middle
}

TEST(PrefixDiskTier, AnotherModelsFileIsAMissAndRemoved) {
  test::TempDir dir;
  PrefixDiskTier mine(options(dir.path(), int64_t{1} << 20, 1), geometry(), policy(), kBlock, nullptr);
  PrefixDiskTier other(options(dir.path(), int64_t{1} << 20, 2), geometry(), policy(), kBlock, nullptr);
  KvPolicy q8 = policy();
  q8.dtype = KvDType::Q8_0;
  PrefixDiskTier other_dtype(options(dir.path(), int64_t{1} << 20, 1), geometry(), q8, kBlock, nullptr);
  // Different models never share a name: both keep their own file of the same block.
  ASSERT_TRUE(store(mine, 3));
  ASSERT_TRUE(store(other, 3));
  EXPECT_NE(mine.path_of(hash_of(3)), other.path_of(hash_of(3)));
  EXPECT_NE(mine.path_of(hash_of(3)), other_dtype.path_of(hash_of(3)));
  // One copied under this model's name (a foreign file) is a miss and is removed.
  fs::copy_file(other.path_of(hash_of(3)), mine.path_of(hash_of(3)), fs::copy_options::overwrite_existing);
  std::vector<uint8_t> got;
  EXPECT_FALSE(load(mine, 3, &got));
  EXPECT_FALSE(fs::exists(mine.path_of(hash_of(3))));
  EXPECT_TRUE(load(other, 3, &got));
  // So is a block whose header names other tokens than asked for.
  ASSERT_TRUE(store(mine, 4));
  EXPECT_FALSE(mine.load(hash_of(4), hash_of(3), tokens_of(5), &got));
  EXPECT_FALSE(mine.has(hash_of(4)));
}

TEST(PrefixDiskTier, FullDiskIsALoggedSkip) {
  test::TempDir dir;
  std::string logged;
  PrefixDiskOptions o = options(dir.path());
  o.log = [&](const std::string& s) { logged = s; };
  std::vector<KvEvent> events;
  PrefixDiskTier t(o, geometry(), policy(), kBlock, &events);
  t.inject_write_errors(1, ENOSPC);
  EXPECT_FALSE(store(t, 0));
  EXPECT_EQ(t.stats().write_skips, 1);
  EXPECT_NE(logged.find("No space left on device"), std::string::npos) << logged;
  EXPECT_EQ(files_in(dir.path()), 0u);  // the partial temporary file is gone
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(store(t, 0));  // space again
  std::vector<uint8_t> got;
  EXPECT_TRUE(load(t, 0, &got));
}

TEST(PrefixDiskTier, BadOptionsAreOneLineErrors) {
  test::TempDir dir;
  auto message = [&](const PrefixDiskOptions& o, const KvGeometry& g) {
    try {
      PrefixDiskTier t(o, g, policy(), kBlock, nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(options(dir.path("missing")), geometry()).find("not an existing directory"), std::string::npos);
  EXPECT_NE(message(options(dir.path(), 0), geometry()).find("--prefix-cache-disk-bytes"), std::string::npos);
  EXPECT_NE(message(options(dir.path()), geometry(64)).find("sliding-window"), std::string::npos);
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directory(dir.path("ro"));
    fs::permissions(dir.path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_NE(message(options(dir.path("ro")), geometry()).find("not writable"), std::string::npos);
    fs::permissions(dir.path("ro"), fs::perms::owner_all);
  }
  for (const std::string& m : {message(options(dir.path("missing")), geometry())})
    EXPECT_EQ(m.find('\n'), std::string::npos);
}

// Runs fn on a thread and waits at most `seconds` for it; on a timeout,
// unblock() is called (opening a FIFO's other end frees a reader stuck in
// open) before joining, and false is returned.
bool within(double seconds, const std::function<void()>& fn, const std::function<void()>& unblock) {
  std::promise<void> done;
  std::future<void> f = done.get_future();
  std::thread t([&] {
    fn();
    done.set_value();
  });
  const bool ok = f.wait_for(std::chrono::duration<double>(seconds)) == std::future_status::ready;
  if (!ok) {
    unblock();
    if (f.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      t.detach();  // still stuck: leave it rather than hang the suite
      return false;
    }
  }
  t.join();
  return ok;
}

// Frees a reader blocked opening the FIFO at `path` (if any), as a writer would.
void unblock_fifo(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
  if (fd >= 0) ::close(fd);
}

TEST(PrefixDiskTier, FifoIsAMissAndDoesNotBlock) {
  test::TempDir dir;
  std::string logged;
  PrefixDiskOptions o = options(dir.path());
  o.log = [&](const std::string& s) { logged += s + "\n"; };
  PrefixDiskTier t(o, geometry(), policy(), kBlock, nullptr);
  const std::string path = t.path_of(hash_of(0));
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  EXPECT_FALSE(t.has(hash_of(0)));
  bool hit = true;
  std::vector<uint8_t> got;
  EXPECT_TRUE(within(5, [&] { hit = load(t, 0, &got); }, [&] { unblock_fifo(path); })) << "the read blocked on a FIFO";
  EXPECT_FALSE(hit);
  EXPECT_EQ(t.stats().bad_files, 1);
  EXPECT_NE(logged.find("not a regular file"), std::string::npos) << logged;
  EXPECT_FALSE(fs::exists(fs::symlink_status(path)));  // removed: reported once
  // A write replaces it with a genuine file.
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  EXPECT_TRUE(within(5, [&] { hit = store(t, 0) && load(t, 0, &got); }, [&] { unblock_fifo(path); }));
  EXPECT_TRUE(hit);
}

TEST(PrefixDiskTier, DeviceIsAMiss) {
  test::TempDir dir;
  PrefixDiskTier t(options(dir.path()), geometry(), policy(), kBlock, nullptr);
  // A character device (/dev/zero's numbers) where one may be made (root); a
  // socket otherwise: neither is ever opened for its bytes.
  const std::string path = t.path_of(hash_of(1));
  if (::mknod(path.c_str(), S_IFCHR | 0644, makedev(1, 5)) != 0) {
    ASSERT_EQ(::mknod(path.c_str(), S_IFSOCK | 0644, 0), 0);
  }
  std::vector<uint8_t> got;
  bool hit = true;
  EXPECT_TRUE(within(5, [&] { hit = load(t, 1, &got); }, [] {}));
  EXPECT_FALSE(hit);
  EXPECT_EQ(t.stats().bad_files, 1);
}

TEST(PrefixDiskTier, SymlinkIsAMissEvenToAGenuineBlock) {
  test::TempDir dir;
  PrefixDiskTier t(options(dir.path()), geometry(), policy(), kBlock, nullptr);
  ASSERT_TRUE(store(t, 2));
  const std::string path = t.path_of(hash_of(2)), moved = dir.path("elsewhere");
  fs::rename(path, moved);
  fs::create_symlink(moved, path);
  EXPECT_FALSE(t.has(hash_of(2)));
  std::vector<uint8_t> got;
  bool hit = true;
  EXPECT_TRUE(within(5, [&] { hit = load(t, 2, &got); }, [] {}));
  EXPECT_FALSE(hit);
  EXPECT_FALSE(fs::exists(fs::symlink_status(path)));  // the link is removed, never its target
  EXPECT_TRUE(fs::exists(moved));
  // A link to a FIFO neither blocks nor is followed.
  ASSERT_EQ(::mkfifo(dir.path("fifo").c_str(), 0644), 0);
  fs::create_symlink(dir.path("fifo"), path);
  EXPECT_TRUE(within(5, [&] { hit = load(t, 2, &got); }, [&] { unblock_fifo(dir.path("fifo")); }));
  EXPECT_FALSE(hit);
}

TEST(PrefixDiskTier, PlantedFileIsAMiss) {
  // Someone who may write the directory but not read its key makes a file
  // with every header field right: its MAC is of another key.
  test::TempDir dir, attacker;
  std::string logged;
  PrefixDiskOptions o = options(dir.path());
  o.log = [&](const std::string& s) { logged += s + "\n"; };
  PrefixDiskTier t(o, geometry(), policy(), kBlock, nullptr);
  PrefixDiskTier forger(options(attacker.path()), geometry(), policy(), kBlock, nullptr);
  ASSERT_TRUE(store(forger, 3));
  fs::copy_file(forger.path_of(hash_of(3)), t.path_of(hash_of(3)));
  std::vector<uint8_t> got;
  EXPECT_FALSE(load(t, 3, &got));
  EXPECT_NE(logged.find("MAC mismatch"), std::string::npos) << logged;
  EXPECT_FALSE(fs::exists(t.path_of(hash_of(3))));
  EXPECT_EQ(t.stats().bad_files, 1);
  EXPECT_EQ(t.stats().reads, 0);
  // The same block written with the directory's key is a hit.
  ASSERT_TRUE(store(t, 3));
  EXPECT_TRUE(load(t, 3, &got));
  EXPECT_EQ(got, payload_of(t, 3));
}

TEST(PrefixDiskTier, KeyFileIsMadeOnceWithMode0600) {
  test::TempDir dir;
  const std::string key = dir.path(".offgraph-kvb-key");
  {
    PrefixDiskTier t(options(dir.path()), geometry(), policy(), kBlock, nullptr);
    ASSERT_TRUE(store(t, 0));
  }
  struct stat st {};
  ASSERT_EQ(::lstat(key.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  std::ifstream in(key, std::ios::binary);
  const std::string first((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Tiers starting together over one directory agree on one key.
  test::TempDir shared;
  std::vector<std::unique_ptr<PrefixDiskTier>> tiers(4);
  std::vector<std::thread> ts;
  for (auto& t : tiers)
    ts.emplace_back([&] { t = std::make_unique<PrefixDiskTier>(options(shared.path()), geometry(), policy(), kBlock, nullptr); });
  for (auto& t : ts) t.join();
  ASSERT_TRUE(store(*tiers[0], 1));
  std::vector<uint8_t> got;
  for (auto& t : tiers) EXPECT_TRUE(load(*t, 1, &got));
  EXPECT_EQ(files_in(shared.path()), 1u);  // the block: no temporary file left
  // A restart reads the same key: the block written before is a hit.
  PrefixDiskTier again(options(dir.path()), geometry(), policy(), kBlock, nullptr);
  EXPECT_TRUE(load(again, 0, &got));
  std::ifstream in2(key, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>()), first);
}

TEST(PrefixDiskTier, UntrustworthyKeyFileIsAOneLineError) {
  auto message = [](const std::string& dir) {
    try {
      PrefixDiskTier t(options(dir), geometry(), policy(), kBlock, nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  {
    test::TempDir dir;  // readable by others: the MAC would prove nothing
    { PrefixDiskTier t(options(dir.path()), geometry(), policy(), kBlock, nullptr); }
    fs::permissions(dir.path(".offgraph-kvb-key"), fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
    const std::string m = message(dir.path());
    EXPECT_NE(m.find("mode 0600"), std::string::npos) << m;
    EXPECT_NE(m.find(".offgraph-kvb-key"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
  {
    test::TempDir dir;  // a FIFO: refused, without blocking
    ASSERT_EQ(::mkfifo(dir.path(".offgraph-kvb-key").c_str(), 0600), 0);
    std::string m;
    EXPECT_TRUE(within(5, [&] { m = message(dir.path()); }, [&] { unblock_fifo(dir.path(".offgraph-kvb-key")); }));
    EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
  }
  {
    test::TempDir dir, elsewhere;  // a link to a key elsewhere
    { PrefixDiskTier t(options(elsewhere.path()), geometry(), policy(), kBlock, nullptr); }
    fs::create_symlink(elsewhere.path(".offgraph-kvb-key"), dir.path(".offgraph-kvb-key"));
    EXPECT_NE(message(dir.path()).find("not a regular file"), std::string::npos);
  }
  {
    test::TempDir dir;  // the wrong size
    { std::ofstream(dir.path(".offgraph-kvb-key")) << "short"; }
    fs::permissions(dir.path(".offgraph-kvb-key"), fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_NE(message(dir.path()).find("32-byte"), std::string::npos);
  }
}

}  // namespace
}  // namespace og
