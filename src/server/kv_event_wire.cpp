// msgpack encoding of KV events in vLLM 0.11's layout (see kv_event_wire.h).
#include "server/kv_event_wire.h"

#include <bit>
#include <cstring>

#include "base/error.h"

namespace og::server {

KvHashFormat kv_hash_format_of(const std::string& name) {
  if (name == "int") return KvHashFormat::kInt;
  if (name == "bytes") return KvHashFormat::kBytes;
  fail("unknown block hash format '", name, "' (int or bytes)");
}

KvEventEncoding kv_event_encoding_of(const std::string& name) {
  if (name == "array") return KvEventEncoding::kArray;
  if (name == "map") return KvEventEncoding::kMap;
  fail("unknown KV event encoding '", name, "' (array or map)");
}

void MsgpackWriter::be(uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
}

void MsgpackWriter::nil() { out_ += '\xc0'; }

void MsgpackWriter::uint(uint64_t v) {
  if (v < 0x80) {
    out_ += static_cast<char>(v);  // positive fixint
  } else if (v <= 0xff) {
    out_ += '\xcc';
    be(v, 1);
  } else if (v <= 0xffff) {
    out_ += '\xcd';
    be(v, 2);
  } else if (v <= 0xffffffffull) {
    out_ += '\xce';
    be(v, 4);
  } else {
    out_ += '\xcf';
    be(v, 8);
  }
}

void MsgpackWriter::sint(int64_t v) {
  if (v >= 0) return uint(static_cast<uint64_t>(v));
  const uint64_t u = static_cast<uint64_t>(v);
  if (v >= -32) {
    out_ += static_cast<char>(u & 0xff);  // negative fixint
  } else if (v >= INT8_MIN) {
    out_ += '\xd0';
    be(u, 1);
  } else if (v >= INT16_MIN) {
    out_ += '\xd1';
    be(u, 2);
  } else if (v >= INT32_MIN) {
    out_ += '\xd2';
    be(u, 4);
  } else {
    out_ += '\xd3';
    be(u, 8);
  }
}

void MsgpackWriter::f64(double v) {
  out_ += '\xcb';
  be(std::bit_cast<uint64_t>(v), 8);
}

void MsgpackWriter::str(std::string_view s) {
  const size_t n = s.size();
  if (n < 32) {
    out_ += static_cast<char>(0xa0 | n);
  } else if (n <= 0xff) {
    out_ += '\xd9';
    be(n, 1);
  } else if (n <= 0xffff) {
    out_ += '\xda';
    be(n, 2);
  } else {
    out_ += '\xdb';
    be(n, 4);
  }
  out_.append(s);
}

void MsgpackWriter::bin(const uint8_t* data, size_t n) {
  if (n <= 0xff) {
    out_ += '\xc4';
    be(n, 1);
  } else if (n <= 0xffff) {
    out_ += '\xc5';
    be(n, 2);
  } else {
    out_ += '\xc6';
    be(n, 4);
  }
  out_.append(reinterpret_cast<const char*>(data), n);
}

void MsgpackWriter::array(size_t n) {
  if (n < 16) {
    out_ += static_cast<char>(0x90 | n);
  } else if (n <= 0xffff) {
    out_ += '\xdc';
    be(n, 2);
  } else {
    out_ += '\xdd';
    be(n, 4);
  }
}

void MsgpackWriter::map(size_t n) {
  if (n < 16) {
    out_ += static_cast<char>(0x80 | n);
  } else if (n <= 0xffff) {
    out_ += '\xde';
    be(n, 2);
  } else {
    out_ += '\xdf';
    be(n, 4);
  }
}

namespace {

void write_hash(MsgpackWriter& w, const BlockHash& h, KvHashFormat format) {
  if (format == KvHashFormat::kInt) {
    w.uint(block_hash_low64(h));
  } else {
    w.bin(h.data(), h.size());
  }
}

void write_hashes(MsgpackWriter& w, const std::vector<BlockHash>& hashes, KvHashFormat format) {
  w.array(hashes.size());
  for (const BlockHash& h : hashes) write_hash(w, h, format);
}

// vLLM's medium is `str | None`: an empty medium is None.
void write_medium(MsgpackWriter& w, const std::string& medium) {
  if (medium.empty()) {
    w.nil();
  } else {
    w.str(medium);
  }
}

// Writes an event's header and tag: [tag, ...] with `fields` more elements,
// or {"type": tag, ...} with `fields` more pairs. key() then names each field
// in the map encoding (and writes nothing in the array one).
class EventWriter {
 public:
  EventWriter(MsgpackWriter& w, KvEventEncoding enc, const char* tag, size_t fields)
      : w_(w), map_(enc == KvEventEncoding::kMap) {
    if (map_) {
      w_.map(fields + 1);
      w_.str("type");
    } else {
      w_.array(fields + 1);
    }
    w_.str(tag);
  }
  MsgpackWriter& key(const char* name) {
    if (map_) w_.str(name);
    return w_;
  }

 private:
  MsgpackWriter& w_;
  bool map_;
};

}  // namespace

void write_kv_event(MsgpackWriter& w, const KvEvent& e, KvHashFormat format, KvEventEncoding encoding) {
  switch (e.type) {
    case KvEvent::Type::kBlockStored: {
      // vLLM 0.11's BlockStored has 6 fields, none with a default, so
      // omit_defaults drops none; current vLLM adds lora_name (no default,
      // so always there) and fields with defaults (extra_keys, group_idx,
      // ...) that omit_defaults leaves out at their default, as here.
      const bool map = encoding == KvEventEncoding::kMap;
      EventWriter ev(w, encoding, "BlockStored", map ? 7 : 6);
      write_hashes(ev.key("block_hashes"), e.hashes, format);
      if (e.parent) {
        write_hash(ev.key("parent_block_hash"), *e.parent, format);
      } else {
        ev.key("parent_block_hash").nil();
      }
      ev.key("token_ids").array(e.token_ids.size());
      for (int32_t t : e.token_ids) w.sint(t);
      ev.key("block_size").sint(e.block_size);
      ev.key("lora_id").nil();  // no adapters
      write_medium(ev.key("medium"), e.medium);
      if (map) ev.key("lora_name").nil();
      break;
    }
    case KvEvent::Type::kBlockRemoved: {
      EventWriter ev(w, encoding, "BlockRemoved", 2);
      write_hashes(ev.key("block_hashes"), e.hashes, format);
      write_medium(ev.key("medium"), e.medium);
      break;
    }
    case KvEvent::Type::kAllBlocksCleared: {
      EventWriter ev(w, encoding, "AllBlocksCleared", 0);
      break;
    }
  }
}

std::string encode_kv_event_batch(double ts, const std::vector<KvEvent>& events, KvHashFormat format,
                                  int data_parallel_rank, KvEventEncoding encoding) {
  MsgpackWriter w;
  // data_parallel_rank defaults to None, but vLLM's publisher fills in its
  // rank (0 for a single engine) before encoding, so it is always there.
  w.array(3);
  w.f64(ts);
  w.array(events.size());
  for (const KvEvent& e : events) write_kv_event(w, e, format, encoding);
  w.sint(data_parallel_rank);
  return w.take();
}

std::string seq_frame(int64_t seq) {
  std::string out(8, '\0');
  const uint64_t u = static_cast<uint64_t>(seq);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((u >> (8 * (7 - i))) & 0xff);
  return out;
}

uint64_t seq_of_frame(std::string_view frame) {
  uint64_t v = 0;
  for (unsigned char c : frame) v = (v << 8) | c;
  return v;
}

}  // namespace og::server
