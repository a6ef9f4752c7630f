// Image spans in the prefix cache's identity (docs/vision.md): block hashes
// carry the image's hash as an extra key, so prompts with the same image share
// their prefix, prompts with different images share only what precedes it,
// the blocks after an image depend on it, and a match never ends inside an
// image. The cache here is filled with arbitrary K/V: only the identity of
// positions matters.
#include <gtest/gtest.h>

#include "base/error.h"
#include "runtime/block_hash.h"
#include "runtime/prefix_cache.h"

namespace og {
namespace {

constexpr int kBlock = 4;
constexpr int32_t kImg = 99;  // the placeholder id at image positions

KvGeometry geometry() {
  KvGeometry g;
  g.caches = {KvCacheSpec{1, 4, 4, 0}};
  g.layer_cache = {0};
  g.layer_writes = {true};
  return g;
}

std::unique_ptr<KvCache> make_cache() {
  KvPolicy p;
  p.max_capacity = 64;
  p.initial_capacity = 8;
  p.max_sequences = 8;
  p.block_size = kBlock;
  return make_kv_cache(KvKind::kBatchedCell, geometry(), p);
}

// Writes n positions into sequence seq (K/V of no meaning).
void fill(KvCache& c, int seq, int64_t n) {
  if (c.length(seq) < 0) {
    ASSERT_TRUE(c.add_sequence(seq).ok());
  }
  std::vector<KvRow> rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back({seq, c.length(seq) + i});
  std::vector<float> q(n * 4, 0.5f), kv(n * 4, 0.25f), out(n * 4);
  ASSERT_TRUE(c.begin_step(rows).ok());
  c.update_and_attend(0, rows, q.data(), 1, kv.data(), kv.data(), 1.0f, out.data());
  c.end_step();
}

Sha256Digest image_hash(const char* pixels) { return Sha256::of(std::string_view(pixels)); }

// 2 text tokens, an 8-position image, then `tail`.
std::vector<int32_t> prompt(std::vector<int32_t> tail) {
  std::vector<int32_t> p = {5, 6, kImg, kImg, kImg, kImg, kImg, kImg, kImg, kImg};
  p.insert(p.end(), tail.begin(), tail.end());
  return p;
}

struct Fixture {
  Fixture() : cache(make_cache()), prefix(*cache, options()) {}
  static PrefixCacheOptions options() {
    PrefixCacheOptions o;
    o.max_entries = 4;
    o.first_seq = 4;
    o.block_size = kBlock;
    o.events = true;
    return o;
  }
  // Captures `p` with its images as an entry (through sequence 0).
  void capture(const std::vector<int32_t>& p, const std::vector<ImageSpan>& images) {
    fill(*cache, 0, int64_t(p.size()));
    prefix.capture(0, p, "", images);
    ASSERT_TRUE(cache->remove_sequence(0).ok());
  }
  std::unique_ptr<KvCache> cache;
  PrefixCache prefix;
};

const ImageSpan kCat{2, 8, image_hash("cat pixels, 896x896, siglip")};
const ImageSpan kDog{2, 8, image_hash("dog pixels, 896x896, siglip")};

TEST(ImagePrefix, TheSameImageSharesThePrefix) {
  Fixture f;
  f.capture(prompt({7, 8, 9, 10, 11, 12}), {kCat});
  // The same image, another question after it: everything up to the question is shared.
  EXPECT_EQ(f.prefix.fork_into(prompt({7, 8, 20, 21}), 64, 1, "", nullptr, std::vector{kCat}), 12);
  EXPECT_EQ(f.cache->length(1), 12);
}

TEST(ImagePrefix, DifferentImagesNeverShareTheImageOrWhatFollows) {
  Fixture f;
  f.capture(prompt({7, 8, 9, 10, 11, 12}), {kCat});
  // The same placeholder ids and text, another image: only the text before it.
  EXPECT_EQ(f.prefix.fork_into(prompt({7, 8, 9, 10, 11, 12}), 64, 1, "", nullptr, std::vector{kDog}), 2);
  // The same ids without any image (text that happens to use the placeholder id).
  EXPECT_EQ(f.prefix.fork_into(prompt({7, 8, 9, 10, 11, 12}), 64, 2, ""), 2);
  // The same image at another place.
  ImageSpan moved = kCat;
  moved.begin = 1;
  moved.length = 9;
  std::vector<int32_t> p = prompt({7, 8, 9, 10, 11, 12});
  p[1] = kImg;
  EXPECT_EQ(f.prefix.fork_into(p, 64, 3, "", nullptr, std::vector{moved}), 1);
}

TEST(ImagePrefix, BlocksFromTheImageOnDependOnItAndEventsCarryThoseHashes) {
  const BlockHasher h(kBlock, "0");
  const std::vector<int32_t> p = prompt({7, 8, 9, 10, 11, 12});  // 16 positions: 4 blocks
  const std::vector<BlockHash> cat = h.chain(p, "", std::vector{kCat});
  const std::vector<BlockHash> dog = h.chain(p, "", std::vector{kDog});
  const std::vector<BlockHash> none = h.chain(p, "");
  ASSERT_EQ(cat.size(), 4u);
  for (size_t b = 0; b < 4; ++b) {  // block 0 holds image positions 2, 3: all differ
    EXPECT_NE(cat[b], dog[b]) << b;
    EXPECT_NE(cat[b], none[b]) << b;
  }
  // Block 3 (positions 12..15) holds no image position, yet depends on it through its parent.
  const std::vector<int32_t> text = {5, 6, 7, 8, 9, 10, 11, 12};
  const ImageSpan late{4, 4, kCat.hash};
  const std::vector<BlockHash> a = h.chain(text, "", std::vector{late});
  const std::vector<BlockHash> b = h.chain(text, "");
  EXPECT_EQ(a[0], b[0]);  // the block before the image: unchanged
  EXPECT_NE(a[1], b[1]);
  // The image's key: its hash in hex among the extra keys, before the salt.
  const std::vector<std::string> keys = {to_hex(kCat.hash)};
  const std::vector<uint8_t> in = block_hash_input(h.none_hash(), std::span(p).first(4), "salt", keys);
  const std::string hex = to_hex(in);
  EXPECT_NE(hex.find("82" "7840" + to_hex(std::span<const uint8_t>(
                                         reinterpret_cast<const uint8_t*>(keys[0].data()), keys[0].size())) +
                     "6473616c74"),
            std::string::npos)
      << hex;  // [text(64) hash-hex, text(4) "salt"]
  Fixture f;
  f.capture(p, {kCat});
  std::vector<KvEvent> ev = f.prefix.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].hashes, cat);
}

TEST(ImagePrefix, AMatchNeverEndsInsideAnImage) {
  Fixture f;
  f.capture(prompt({7, 8, 9, 10, 11, 12}), {kCat});
  // A cap inside the image: the match stops where the image starts.
  EXPECT_EQ(f.prefix.fork_into(prompt({7, 8}), 6, 1, "", nullptr, std::vector{kCat}), 2);
  // A prompt whose image is longer than the entry's: the same hash, another span.
  ImageSpan longer = kCat;
  longer.length = 9;
  EXPECT_EQ(f.prefix.fork_into(prompt({kImg, 8}), 64, 2, "", nullptr, std::vector{longer}), 2);
}

TEST(ImagePrefix, TheSameTokensWithAnotherImageAreAnotherEntry) {
  Fixture f;
  const std::vector<int32_t> p = prompt({7, 8});
  f.capture(p, {kCat});
  f.capture(p, {kDog});
  EXPECT_EQ(f.prefix.stats().entries, 2);
  f.capture(p, {kCat});  // already cached
  EXPECT_EQ(f.prefix.stats().entries, 2);
  EXPECT_EQ(f.prefix.fork_into(p, 64, 1, "", nullptr, std::vector{kDog}), 12);
}

TEST(ImagePrefix, BadImageListsAreClearErrors) {
  Fixture f;
  fill(*f.cache, 0, 12);
  const std::vector<int32_t> p = prompt({7, 8});
  auto error_of = [&](std::vector<ImageSpan> images) -> std::string {
    try {
      f.prefix.capture(0, p, "", images);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error_of({{2, 0, {}}}).find("has length 0"), std::string::npos);
  EXPECT_NE(error_of({{2, 8, {}}, {9, 2, {}}}).find("overlaps"), std::string::npos);
  EXPECT_NE(error_of({{6, 8, {}}}).find("past the 12 positions"), std::string::npos);
}

}  // namespace
}  // namespace og
