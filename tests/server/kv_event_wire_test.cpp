// The msgpack bytes of KV events against vLLM 0.11's layout, computed by hand
// from the msgpack spec: each value's shortest form, tagged arrays, the batch
// [ts, events, rank], and both block hash forms.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "server/kv_event_wire.h"

namespace og::server {
namespace {

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string hex_of(std::string_view ascii) {
  return hex(std::string(ascii));
}

// A hash whose last 8 bytes read big-endian are `low` and whose first byte is `top`.
BlockHash hash_with(uint64_t low, uint8_t top = 0xee) {
  BlockHash h{};
  h[0] = top;
  for (int i = 0; i < 8; ++i) h[24 + i] = static_cast<uint8_t>(low >> (8 * (7 - i)));
  return h;
}

TEST(KvEventWire, ShortestForms) {
  MsgpackWriter w;
  w.uint(0);
  w.uint(127);
  w.uint(128);
  w.uint(255);
  w.uint(256);
  w.uint(65536);
  w.uint(1ull << 32);
  w.sint(-1);
  w.sint(-32);
  w.sint(-33);
  w.sint(-129);
  w.nil();
  w.f64(1.5);
  EXPECT_EQ(hex(w.bytes()),
            "00" "7f" "cc80" "ccff" "cd0100" "ce00010000" "cf0000000100000000"
            "ff" "e0" "d0df" "d1ff7f" "c0" "cb3ff8000000000000");
}

TEST(KvEventWire, StringsArraysBinary) {
  MsgpackWriter w;
  w.str("");
  w.str(std::string(31, 'a'));
  w.str(std::string(32, 'b'));
  w.array(15);
  w.array(16);
  const uint8_t b[2] = {1, 2};
  w.bin(b, 2);
  EXPECT_EQ(hex(w.bytes()), "a0" "bf" + hex_of(std::string(31, 'a')) + "d920" + hex_of(std::string(32, 'b')) +
                                "9f" "dc0010" "c4020102");
}

TEST(KvEventWire, BlockStoredIntHashes) {
  KvEvent e;
  e.type = KvEvent::Type::kBlockStored;
  e.hashes = {hash_with(0x0102030405060708ull), hash_with(42)};
  e.token_ids = {1, 200, 70000};
  e.block_size = 16;
  e.medium = "CPU";
  MsgpackWriter w;
  write_kv_event(w, e, KvHashFormat::kInt);
  // [tag, [h1, h2], nil parent, [1, 200, 70000], 16, nil lora_id, "CPU"]
  EXPECT_EQ(hex(w.bytes()), "97" "ab" + hex_of("BlockStored") + "92" "cf0102030405060708" "2a" "c0" "93" "01" "ccc8"
                                "ce00011170" "10" "c0" "a3" + hex_of("CPU"));

  e.parent = hash_with(0xffffffffffffffffull);
  e.hashes.resize(1);
  e.token_ids = {5};
  MsgpackWriter w2;
  write_kv_event(w2, e, KvHashFormat::kInt);
  EXPECT_EQ(hex(w2.bytes()), "97" "ab" + hex_of("BlockStored") + "91" "cf0102030405060708" "cfffffffffffffffff" "91"
                                 "05" "10" "c0" "a3" + hex_of("CPU"));
}

TEST(KvEventWire, BlockStoredBytesHashesAndNoMedium) {
  KvEvent e;
  e.hashes = {hash_with(7, 0xab)};
  e.parent = hash_with(9, 0xcd);
  e.token_ids = {3, 4};
  e.block_size = 2;
  e.medium = "";
  MsgpackWriter w;
  write_kv_event(w, e, KvHashFormat::kBytes);
  const std::string h = "ab" + std::string(46, '0') + "0000000000000007";
  const std::string p = "cd" + std::string(46, '0') + "0000000000000009";
  EXPECT_EQ(hex(w.bytes()), "97" "ab" + hex_of("BlockStored") + "91" "c420" + h + "c420" + p + "92" "03" "04" "02" "c0"
                                "c0");
}

TEST(KvEventWire, BlockRemovedAndAllCleared) {
  KvEvent r;
  r.type = KvEvent::Type::kBlockRemoved;
  r.hashes = {hash_with(1), hash_with(300)};
  r.medium = "disk";
  KvEvent c;
  c.type = KvEvent::Type::kAllBlocksCleared;
  MsgpackWriter w;
  write_kv_event(w, r, KvHashFormat::kInt);
  write_kv_event(w, c, KvHashFormat::kInt);
  EXPECT_EQ(hex(w.bytes()), "93" "ac" + hex_of("BlockRemoved") + "92" "01" "cd012c" "a4" + hex_of("disk") + "91" "b0" +
                                hex_of("AllBlocksCleared"));
}

TEST(KvEventWire, Batch) {
  KvEvent c;
  c.type = KvEvent::Type::kAllBlocksCleared;
  EXPECT_EQ(hex(encode_kv_event_batch(1.5, {c, c}, KvHashFormat::kInt)),
            "93" "cb3ff8000000000000" "92" "91b0" + hex_of("AllBlocksCleared") + "91b0" + hex_of("AllBlocksCleared") +
                "00");
  EXPECT_EQ(hex(encode_kv_event_batch(0.0, {}, KvHashFormat::kBytes, 3)), "93" "cb0000000000000000" "90" "03");
}

// A msgpack str of fewer than 32 bytes: fixstr header + the bytes.
std::string fixstr(std::string_view s) {
  static const char* d = "0123456789abcdef";
  const unsigned n = 0xa0 | static_cast<unsigned>(s.size());
  return std::string{d[n >> 4], d[n & 15]} + hex_of(s);
}

TEST(KvEventWire, MapEncodingNamesEveryField) {
  // Current vLLM's events (no array_like): {"type": tag, field: value, ...}
  // in declaration order, fields with defaults left out.
  KvEvent e;
  e.hashes = {hash_with(42)};
  e.parent = hash_with(7);
  e.token_ids = {1, 200};
  e.block_size = 2;
  e.medium = "CPU";
  MsgpackWriter w;
  write_kv_event(w, e, KvHashFormat::kInt, KvEventEncoding::kMap);
  EXPECT_EQ(hex(w.bytes()), "88" + fixstr("type") + fixstr("BlockStored") + fixstr("block_hashes") + "91" "2a" +
                                fixstr("parent_block_hash") + "07" + fixstr("token_ids") + "92" "01" "ccc8" +
                                fixstr("block_size") + "02" + fixstr("lora_id") + "c0" + fixstr("medium") +
                                fixstr("CPU") + fixstr("lora_name") + "c0");

  KvEvent r;
  r.type = KvEvent::Type::kBlockRemoved;
  r.hashes = {hash_with(1)};
  r.medium = "disk";
  KvEvent c;
  c.type = KvEvent::Type::kAllBlocksCleared;
  MsgpackWriter w2;
  write_kv_event(w2, r, KvHashFormat::kInt, KvEventEncoding::kMap);
  write_kv_event(w2, c, KvHashFormat::kInt, KvEventEncoding::kMap);
  EXPECT_EQ(hex(w2.bytes()), "83" + fixstr("type") + fixstr("BlockRemoved") + fixstr("block_hashes") + "91" "01" +
                                 fixstr("medium") + fixstr("disk") + "81" + fixstr("type") +
                                 fixstr("AllBlocksCleared"));

  // The batch stays the positional [ts, events, rank].
  EXPECT_EQ(hex(encode_kv_event_batch(1.5, {c}, KvHashFormat::kInt, 0, KvEventEncoding::kMap)),
            "93" "cb3ff8000000000000" "91" "81" + fixstr("type") + fixstr("AllBlocksCleared") + "00");
  // The array encoding is unchanged by the parameter.
  EXPECT_EQ(encode_kv_event_batch(1.5, {c}, KvHashFormat::kInt, 0, KvEventEncoding::kArray),
            encode_kv_event_batch(1.5, {c}, KvHashFormat::kInt));
}

TEST(KvEventWire, MapHeaders) {
  MsgpackWriter w;
  w.map(0);
  w.map(15);
  w.map(16);
  w.map(70000);
  EXPECT_EQ(hex(w.bytes()), "80" "8f" "de0010" "df00011170");
}

TEST(KvEventWire, SequenceFrames) {
  EXPECT_EQ(hex(seq_frame(0)), "0000000000000000");
  EXPECT_EQ(hex(seq_frame(258)), "0000000000000102");
  EXPECT_EQ(hex(seq_frame(-1)), "ffffffffffffffff");
  EXPECT_EQ(seq_of_frame(seq_frame(123456789)), 123456789u);
  EXPECT_EQ(seq_of_frame(std::string("\x01\x00", 2)), 256u);
  EXPECT_EQ(seq_of_frame(""), 0u);
}

TEST(KvEventWire, HashFormatNames) {
  EXPECT_EQ(kv_hash_format_of("int"), KvHashFormat::kInt);
  EXPECT_EQ(kv_hash_format_of("bytes"), KvHashFormat::kBytes);
  EXPECT_THROW(kv_hash_format_of("hex"), og::Error);
  EXPECT_EQ(kv_event_encoding_of("array"), KvEventEncoding::kArray);
  EXPECT_EQ(kv_event_encoding_of("map"), KvEventEncoding::kMap);
  EXPECT_THROW(kv_event_encoding_of("json"), og::Error);
}

}  // namespace
}  // namespace og::server
