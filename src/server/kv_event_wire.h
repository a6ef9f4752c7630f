// The bytes of KV events on the wire, as vLLM 0.11 publishes them
// (vllm/distributed/kv_events.py: msgspec structs with array_like=True,
// omit_defaults=True, and tag=True on the events), so llm-d's KV-cache indexer
// reads an offgraph replica as it reads a vLLM one. A batch is the msgpack
// array
//
//   [ts: float64, [event, ...], data_parallel_rank: int]
//
// and each event an array whose first element is its tag (the class name):
//
//   ["BlockStored", block_hashes, parent_block_hash|nil, token_ids, block_size, lora_id|nil, medium]
//   ["BlockRemoved", block_hashes, medium]
//   ["AllBlocksCleared"]
//
// That is the `array` encoding. The `map` encoding is current vLLM's (after
// vllm#42892 dropped array_like from the events): the batch stays the same
// positional array, and each event is a msgpack map whose "type" key holds the
// tag, followed by the fields by name in declaration order, those with a
// default left out (omit_defaults):
//
//   {"type": "BlockStored", "block_hashes", "parent_block_hash", "token_ids",
//    "block_size", "lora_id", "medium", "lora_name"}
//   {"type": "BlockRemoved", "block_hashes", "medium"}
//   {"type": "AllBlocksCleared"}
//
// A block hash is the low 64 bits of the SHA-256 as an unsigned integer
// (vLLM's default, VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1) or the 32 bytes
// (=0). docs/kv-events.md documents every field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kv_events.h"

namespace og::server {

enum class KvHashFormat { kInt, kBytes };
// kArray: vLLM 0.11's positional events; kMap: current vLLM's named fields.
enum class KvEventEncoding { kArray, kMap };

// "int" / "bytes"; throws og::Error naming the value otherwise.
KvHashFormat kv_hash_format_of(const std::string& name);
// "array" / "map"; throws og::Error naming the value otherwise.
KvEventEncoding kv_event_encoding_of(const std::string& name);

// A msgpack writer of the few types events use, each value in its shortest
// form (as msgspec writes them).
class MsgpackWriter {
 public:
  void nil();
  void uint(uint64_t v);
  void sint(int64_t v);  // negative values in their signed forms, others as uint()
  void f64(double v);    // always float 64 (msgspec writes a Python float so)
  void str(std::string_view s);
  void bin(const uint8_t* data, size_t n);
  void array(size_t n);  // header; the n elements follow
  void map(size_t n);    // header; n key/value pairs follow

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void be(uint64_t v, int n);  // n bytes of v, big-endian
  std::string out_;
};

// One event as vLLM's tagged array (kArray) or tagged map (kMap).
void write_kv_event(MsgpackWriter& w, const KvEvent& e, KvHashFormat format,
                    KvEventEncoding encoding = KvEventEncoding::kArray);

// A batch: [ts, [events...], data_parallel_rank] (an array in both encodings).
std::string encode_kv_event_batch(double ts, const std::vector<KvEvent>& events, KvHashFormat format,
                                  int data_parallel_rank = 0, KvEventEncoding encoding = KvEventEncoding::kArray);

// An 8-byte big-endian sequence number (the middle frame of a message and the
// first of a replayed one); -1 (all ones) is the replay's end marker.
std::string seq_frame(int64_t seq);
// The number an up-to-8-byte big-endian frame holds (a replay request's start).
uint64_t seq_of_frame(std::string_view frame);

}  // namespace og::server
