// GGUF metadata memory: arrays are held as their encoding (GgufArray), so a
// file's metadata costs about its size in memory (issue 50: a 17 MB file with
// one u8 array used 1.69 GB when every element was a GgufValue), and counts
// that the file cannot hold are refused with a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"

namespace og {
namespace {

// Little-endian GGUF bytes by hand (a writer would build the elements first).
struct Raw {
  std::vector<uint8_t> b;
  template <class T>
  Raw& put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  Raw& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint64_t n_kv) { return put<uint32_t>(0x46554747).put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(n_kv); }
  Raw& array_header(const std::string& key, GgufType elem, uint64_t n) {
    str(key).put<uint32_t>(static_cast<uint32_t>(GgufType::ARRAY));
    return put<uint32_t>(static_cast<uint32_t>(elem)).put<uint64_t>(n);
  }
};

std::string parse_error(const std::vector<uint8_t>& b) {
  try {
    GgufFile::parse(b.data(), b.size(), "m.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufMetadataMemory, LargeU8ArrayTakesAboutItsSizeInMemory) {
  constexpr uint64_t kN = 4 << 20;
  Raw r;
  r.header(1).array_header("big", GgufType::U8, kN);
  for (uint64_t k = 0; k < kN; ++k) r.b.push_back(static_cast<uint8_t>(k * 7));
  auto g = GgufFile::parse(r.b.data(), r.b.size(), "big.gguf");
  const GgufValue* v = g->get("big");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, GgufType::ARRAY);
  EXPECT_EQ(v->arr.type(), GgufType::U8);
  ASSERT_EQ(v->arr.size(), kN);
  EXPECT_EQ(v->arr.bytes().size(), kN);  // one byte an element, as on disk
  // Before GgufArray this was ~100 bytes an element (sizeof(GgufValue)).
  EXPECT_LE(g->metadata_bytes(), r.b.size() + 4096);
  EXPECT_EQ(v->arr[kN - 1].u, static_cast<uint8_t>((kN - 1) * 7));
  EXPECT_EQ(v->arr[kN - 1].type, GgufType::U8);
}

TEST(GgufMetadataMemory, StringAndNestedArraysStayProportional) {
  constexpr uint64_t kStrings = 200000, kInner = 50000;
  Raw r;
  r.header(2).array_header("tokens", GgufType::STRING, kStrings);
  for (uint64_t k = 0; k < kStrings; ++k) r.str(k % 2 ? "" : "tok" + std::to_string(k));
  r.array_header("nested", GgufType::ARRAY, kInner);
  for (uint64_t k = 0; k < kInner; ++k) r.put<uint32_t>(static_cast<uint32_t>(GgufType::U16)).put<uint64_t>(1).put<uint16_t>(k);
  auto g = GgufFile::parse(r.b.data(), r.b.size(), "s.gguf");
  // Strings and nested arrays keep an 8-byte start each beside their encoding,
  // and every one takes at least 8 bytes on disk: at most twice the file.
  EXPECT_LE(g->metadata_bytes(), 2 * r.b.size() + 4096);
  const GgufValue* t = g->get("tokens");
  EXPECT_EQ(t->arr.string_at(0), "tok0");
  EXPECT_EQ(t->arr.string_at(1), "");
  EXPECT_EQ(t->arr[kStrings - 2].s, "tok" + std::to_string(kStrings - 2));
  const std::vector<std::string> all = *g->get_string_array("tokens");
  ASSERT_EQ(all.size(), kStrings);
  EXPECT_EQ(all[4], "tok4");
  const GgufValue inner = g->get("nested")->arr[kInner - 1];
  ASSERT_EQ(inner.type, GgufType::ARRAY);
  EXPECT_TRUE(*inner.arr.begin() == GgufValue::make_int(GgufType::U16, kInner - 1));
}

TEST(GgufMetadataMemory, ElementsDecodeByValue) {
  GgufValue bools = GgufValue::make_array(GgufType::BOOL, {GgufValue::make_bool(true), GgufValue::make_bool(false)});
  GgufValue floats = GgufValue::make_array(GgufType::F32, {GgufValue::make_f32(std::nanf("")), GgufValue::make_f32(-0.5f)});
  GgufWriter w;
  w.set("b", bools);
  w.set("f", floats);
  std::vector<uint8_t> bytes = w.serialize();
  auto g = GgufFile::parse(bytes.data(), bytes.size(), "v.gguf");
  EXPECT_TRUE(*g->get("b") == bools);
  EXPECT_TRUE(*g->get("f") == floats);  // NaN equals NaN, as for scalars
  std::vector<bool> seen;
  for (const GgufValue& e : g->get("b")->arr) seen.push_back(e.b);
  EXPECT_EQ(seen, (std::vector<bool>{true, false}));
  EXPECT_EQ(*g->get_float_array("f").value().rbegin(), -0.5);
  EXPECT_THROW(GgufValue::make_array(GgufType::U32, {GgufValue::make_f32(1)}), Error);
}

TEST(GgufMetadataMemory, CountsTheFileCannotHoldAreErrors) {
  Raw outer;  // a nested array claiming 2^40 elements inside a small one
  outer.header(1).array_header("k", GgufType::ARRAY, 1);
  outer.put<uint32_t>(static_cast<uint32_t>(GgufType::U8)).put<uint64_t>(uint64_t{1} << 40);
  outer.b.resize(outer.b.size() + 64);
  EXPECT_NE(parse_error(outer.b).find("key k: array of 1099511627776 u8 elements does not fit"), std::string::npos)
      << parse_error(outer.b);
  Raw strings;  // a string count within the bytes, but the last string's length runs off the end
  strings.header(1).array_header("k", GgufType::STRING, 3).str("a").str("b").put<uint64_t>(100);
  strings.b.resize(strings.b.size() + 8);
  EXPECT_NE(parse_error(strings.b).find("string value at offset"), std::string::npos) << parse_error(strings.b);
  Raw keys;  // more keys than the limit, each of them small enough for the file
  keys.header(70000);
  for (int k = 0; k < 70000; ++k) keys.str("k" + std::to_string(k)).put<uint32_t>(0).put<uint8_t>(1);
  EXPECT_NE(parse_error(keys.b).find("metadata count 70000 is above the limit of 65536 keys"), std::string::npos)
      << parse_error(keys.b);
}

}  // namespace
}  // namespace og
