// GGUF v2/v3 reader: a bounds-checked cursor over the file bytes, metadata
// values (arrays of arrays included), tensor infos validated against the
// real file size (alignment, block geometry, overflow, overlap, duplicates).
#include "format/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_set>

#include "base/error.h"
#include "tensor/dtype.h"

namespace og {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxArrayDepth = 8;        // arrays of arrays nest at most this deep
constexpr uint32_t kMaxDims = 4;
// Real files carry tens of keys (tokenizer vocabularies are single arrays); a
// cap keeps per-key bookkeeping (~200 bytes a key) small against any file.
constexpr uint64_t kMaxMetadataKeys = 1 << 16;

}  // namespace

// Reads little-endian fields, checking every read against the end.
class GgufCursor {
 public:
  GgufCursor(const uint8_t* data, size_t size, const std::string& name) : data_(data), size_(size), name_(name) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  template <class T>
  T read(const char* what) {
    if (remaining() < sizeof(T))
      fail(name_, ": truncated: file ends at byte ", size_, " while reading ", what, " at offset ", pos_);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const char* what) {
    const size_t n = string_length(what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  void skip_string(const char* what) { pos_ += string_length(what); }
  void skip(uint64_t n) { pos_ += static_cast<size_t>(n); }  // n <= remaining(), checked by the caller
  const uint8_t* data() const { return data_; }

 private:
  // Reads a string's length and checks that its bytes are there.
  size_t string_length(const char* what) {
    uint64_t n = read<uint64_t>(what);
    if (n > remaining())
      fail(name_, ": ", what, " at offset ", pos_ - 8, " has length ", n, ", past the end of the file (",
           remaining(), " bytes left)");
    return static_cast<size_t>(n);
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

namespace {
using Cursor = GgufCursor;

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::F64); }

// Smallest number of bytes one value of type t can take on disk.
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::STRING: return 8;
    case GgufType::ARRAY: return 12;
  }
  return 1;
}

// Bytes of one value of type t on disk; 0 for strings and arrays (variable).
uint64_t fixed_bytes(GgufType t) {
  return t == GgufType::STRING || t == GgufType::ARRAY ? 0 : min_value_bytes(t);
}

struct ArrayHeader {
  GgufType elem;
  uint64_t n;
};

// Reads an array's element type and count, checking the count against the
// bytes left (each element takes at least min_value_bytes).
ArrayHeader read_array_header(Cursor& c, const std::string& key, int depth, const std::string& name) {
  if (depth >= kMaxArrayDepth)
    fail(name, ": key ", key, ": arrays nested more than ", kMaxArrayDepth, " deep");
  uint32_t et = c.read<uint32_t>("array element type");
  if (!valid_value_type(et)) fail(name, ": key ", key, ": array has unknown element type ", et);
  GgufType elem = static_cast<GgufType>(et);
  uint64_t n = c.read<uint64_t>("array length");
  if (n > c.remaining() / min_value_bytes(elem))
    fail(name, ": key ", key, ": array of ", n, " ", gguf_type_name(elem), " elements does not fit in the ",
         c.remaining(), " bytes left in the file");
  return {elem, n};
}

// Walks one array's elements (validating, storing nothing); element starts
// relative to `base` go to `starts` when given.
void skip_elements(Cursor& c, ArrayHeader h, const std::string& key, int depth, const std::string& name,
                   std::vector<uint64_t>* starts, size_t base);

void skip_value(Cursor& c, GgufType t, const std::string& key, int depth, const std::string& name) {
  if (t == GgufType::STRING) return c.skip_string("string value");
  if (t == GgufType::ARRAY) {
    const ArrayHeader h = read_array_header(c, key, depth, name);
    return skip_elements(c, h, key, depth + 1, name, nullptr, 0);
  }
  c.skip(fixed_bytes(t));  // a fixed-size element; its array header checked the bytes are there
}

void skip_elements(Cursor& c, ArrayHeader h, const std::string& key, int depth, const std::string& name,
                   std::vector<uint64_t>* starts, size_t base) {
  if (const uint64_t size = fixed_bytes(h.elem)) return c.skip(h.n * size);
  if (starts) starts->reserve(static_cast<size_t>(h.n));  // n <= bytes left / 8: bounded by the file
  for (uint64_t k = 0; k < h.n; ++k) {
    if (starts) starts->push_back(c.pos() - base);
    skip_value(c, h.elem, key, depth, name);
  }
}

// An array as its encoded elements (see GgufArray): memory about its size on disk.
GgufValue read_array(Cursor& c, const std::string& key, int depth, const std::string& name) {
  const ArrayHeader h = read_array_header(c, key, depth, name);
  const size_t begin = c.pos();
  std::vector<uint64_t> starts;
  skip_elements(c, h, key, depth + 1, name, &starts, begin);
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.arr = GgufArray::adopt(h.elem, h.n, std::vector<uint8_t>(c.data() + begin, c.data() + c.pos()),
                           std::move(starts));
  return v;
}

GgufValue read_value(Cursor& c, GgufType type, const std::string& key, int depth, const std::string& name) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::U8: v.u = c.read<uint8_t>("u8 value"); break;
    case GgufType::I8: v.i = c.read<int8_t>("i8 value"); break;
    case GgufType::U16: v.u = c.read<uint16_t>("u16 value"); break;
    case GgufType::I16: v.i = c.read<int16_t>("i16 value"); break;
    case GgufType::U32: v.u = c.read<uint32_t>("u32 value"); break;
    case GgufType::I32: v.i = c.read<int32_t>("i32 value"); break;
    case GgufType::U64: v.u = c.read<uint64_t>("u64 value"); break;
    case GgufType::I64: v.i = c.read<int64_t>("i64 value"); break;
    case GgufType::F32: v.f = c.read<float>("f32 value"); break;
    case GgufType::F64: v.f = c.read<double>("f64 value"); break;
    case GgufType::BOOL: v.b = c.read<uint8_t>("bool value") != 0; break;
    case GgufType::STRING: v.s = c.read_string("string value"); break;
    case GgufType::ARRAY: return read_array(c, key, depth, name);
  }
  // Integers carry both views so callers need not care about signedness.
  if (type == GgufType::U8 || type == GgufType::U16 || type == GgufType::U32 || type == GgufType::U64)
    v.i = static_cast<int64_t>(v.u);
  if (type == GgufType::I8 || type == GgufType::I16 || type == GgufType::I32 || type == GgufType::I64)
    v.u = static_cast<uint64_t>(v.i);
  return v;
}

const char* type_word(const GgufValue& v) { return gguf_type_name(v.type); }

bool is_integer_type(GgufType t) {
  GgufValue v;
  v.type = t;
  return v.is_integer();
}

bool is_unsigned(GgufType t) {
  return t == GgufType::U8 || t == GgufType::U16 || t == GgufType::U32 || t == GgufType::U64;
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::U8: return "u8";
    case GgufType::I8: return "i8";
    case GgufType::U16: return "u16";
    case GgufType::I16: return "i16";
    case GgufType::U32: return "u32";
    case GgufType::I32: return "i32";
    case GgufType::F32: return "f32";
    case GgufType::BOOL: return "bool";
    case GgufType::STRING: return "string";
    case GgufType::ARRAY: return "array";
    case GgufType::U64: return "u64";
    case GgufType::I64: return "i64";
    case GgufType::F64: return "f64";
  }
  return "?";
}

GgufValue GgufValue::make_u32(uint32_t v) {
  GgufValue r;
  r.type = GgufType::U32;
  r.u = v;
  r.i = v;
  return r;
}
GgufValue GgufValue::make_i32(int32_t v) {
  GgufValue r;
  r.type = GgufType::I32;
  r.i = v;
  r.u = static_cast<uint64_t>(static_cast<int64_t>(v));
  return r;
}
GgufValue GgufValue::make_u64(uint64_t v) {
  GgufValue r;
  r.type = GgufType::U64;
  r.u = v;
  r.i = static_cast<int64_t>(v);
  return r;
}
GgufValue GgufValue::make_f32(float v) {
  GgufValue r;
  r.type = GgufType::F32;
  r.f = v;
  return r;
}
GgufValue GgufValue::make_bool(bool v) {
  GgufValue r;
  r.type = GgufType::BOOL;
  r.b = v;
  return r;
}
GgufValue GgufValue::make_string(std::string v) {
  GgufValue r;
  r.type = GgufType::STRING;
  r.s = std::move(v);
  return r;
}
GgufValue GgufValue::make_array(GgufType elem, const std::vector<GgufValue>& elems) {
  GgufValue r;
  r.type = GgufType::ARRAY;
  r.arr = GgufArray(elem, elems);
  return r;
}
GgufValue GgufValue::make_int(GgufType t, int64_t v) {
  GgufValue r;
  r.type = t;
  r.i = v;
  r.u = static_cast<uint64_t>(v);
  OG_CHECK(r.is_integer(), "GgufValue::make_int: ", gguf_type_name(t), " is not an integer type");
  return r;
}
GgufValue GgufValue::make_f64(double v) {
  GgufValue r;
  r.type = GgufType::F64;
  r.f = v;
  return r;
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64:
      return true;
    default:
      return false;
  }
}
bool GgufValue::is_float() const { return type == GgufType::F32 || type == GgufType::F64; }

bool GgufValue::operator==(const GgufValue& o) const {
  if (type != o.type) return false;
  if (is_integer()) return u == o.u && i == o.i;
  if (is_float()) {  // NaN equals NaN here: "same value as written"
    const double a = type == GgufType::F32 ? static_cast<float>(f) : f;
    const double c = type == GgufType::F32 ? static_cast<float>(o.f) : o.f;
    return a == c || (std::isnan(a) && std::isnan(c));
  }
  if (type == GgufType::BOOL) return b == o.b;
  if (type == GgufType::STRING) return s == o.s;
  return arr == o.arr;
}

size_t GgufValue::storage_bytes() const { return s.capacity() + arr.storage_bytes(); }

// ---- GgufArray ----

GgufArray GgufArray::adopt(GgufType elem, uint64_t n, std::vector<uint8_t> bytes, std::vector<uint64_t> starts) {
  GgufArray a;
  a.elem_ = elem;
  a.n_ = n;
  a.bytes_ = std::move(bytes);
  a.starts_ = std::move(starts);
  OG_CHECK(fixed_bytes(elem) ? a.starts_.empty() && a.bytes_.size() == n * fixed_bytes(elem) : a.starts_.size() == n,
           "GgufArray::adopt: ", n, " ", gguf_type_name(elem), " elements do not match their encoding");
  return a;
}

size_t GgufArray::element_end(size_t k) const {
  if (const uint64_t size = fixed_bytes(elem_)) return static_cast<size_t>((k + 1) * size);
  return k + 1 < starts_.size() ? static_cast<size_t>(starts_[k + 1]) : bytes_.size();
}

GgufValue GgufArray::operator[](size_t k) const {
  OG_CHECK(k < size(), "GgufArray: element ", k, " of ", size());
  const uint64_t size = fixed_bytes(elem_);
  const size_t begin = size ? static_cast<size_t>(k * size) : static_cast<size_t>(starts_[k]);
  static const std::string kWhere = "GGUF array element";
  Cursor c(bytes_.data() + begin, element_end(k) - begin, kWhere);
  return read_value(c, elem_, kWhere, 1, kWhere);  // validated when the file was read: cannot fail
}

GgufValue GgufArray::Iterator::operator*() const { return (*a_)[k_]; }

std::string_view GgufArray::string_at(size_t k) const {
  OG_CHECK(elem_ == GgufType::STRING && k < size(), "GgufArray::string_at: element ", k, " of ", size(), " ",
           gguf_type_name(elem_));
  const size_t begin = static_cast<size_t>(starts_[k]) + 8;  // past the length
  return std::string_view(reinterpret_cast<const char*>(bytes_.data() + begin), element_end(k) - begin);
}

int64_t GgufArray::int_at(size_t k) const {
  const GgufValue v = (*this)[k];
  OG_CHECK(v.is_integer(), "GgufArray::int_at: a ", gguf_type_name(elem_), " array");
  return v.i;
}

double GgufArray::number_at(size_t k) const {
  const GgufValue v = (*this)[k];
  if (v.is_float()) return v.f;
  OG_CHECK(v.is_integer(), "GgufArray::number_at: a ", gguf_type_name(elem_), " array");
  return is_unsigned(v.type) ? static_cast<double>(v.u) : static_cast<double>(v.i);
}

size_t GgufArray::storage_bytes() const {
  return bytes_.capacity() + starts_.capacity() * sizeof(uint64_t);
}

bool GgufArray::operator==(const GgufArray& o) const {
  if (elem_ != o.elem_ || n_ != o.n_) return false;
  if (bytes_ == o.bytes_) return true;
  for (size_t k = 0; k < size(); ++k)  // floats (NaN, -0) and bools (any nonzero) compare by value
    if (!((*this)[k] == o[k])) return false;
  return true;
}

// ---- GgufFile ----

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->file_ = MappedFile::open(path);
  g->name_ = path;
  g->parse_bytes(g->file_.data(), g->file_.size());
  return g;
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, size_t size, std::string name) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->name_ = std::move(name);
  g->parse_bytes(data, size);
  return g;
}

void GgufFile::parse_bytes(const uint8_t* data, size_t size) {
  const std::string& name = name_;
  if (size < 24) fail(name, ": too small to be a GGUF file (", size, " bytes, the header alone is 24)");
  Cursor c(data, size, name);
  uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kMagic) fail(name, ": not a GGUF file (bad magic bytes)");
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) {
    if (version_ == 1) fail(name, ": GGUF version 1 is not supported (only versions 2 and 3)");
    if ((version_ & 0xffffu) == 0 && version_ != 0)
      fail(name, ": GGUF version 0x", std::hex, version_, " looks byte-swapped (a big-endian file?)");
    fail(name, ": unsupported GGUF version ", version_, " (only versions 2 and 3)");
  }
  uint64_t n_tensors = c.read<uint64_t>("tensor count");
  uint64_t n_kv = c.read<uint64_t>("metadata count");
  // A metadata record is at least key length (8) + value type (4) + 1 byte.
  if (n_kv > c.remaining() / 13)
    fail(name, ": metadata count ", n_kv, " is more than the ", c.remaining(), " remaining bytes can hold");
  if (n_kv > kMaxMetadataKeys)
    fail(name, ": metadata count ", n_kv, " is above the limit of ", kMaxMetadataKeys, " keys");
  // A tensor info is at least name length (8) + n_dims (4) + type (4) + offset (8).
  if (n_tensors > c.remaining() / 24)
    fail(name, ": tensor count ", n_tensors, " is more than the ", c.remaining(), " remaining bytes can hold");
  read_metadata(c, n_kv);
  read_tensor_infos(c, n_tensors);
  uint64_t pos = c.pos();
  data_offset_ = (pos + alignment_ - 1) / alignment_ * alignment_;
  place_tensors(data, size);
}

void GgufFile::read_metadata(Cursor& c, uint64_t n_kv) {
  const std::string& name = name_;
  std::unordered_set<std::string> seen;
  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.read_string("metadata key");
    if (!seen.insert(key).second) fail(name, ": duplicate metadata key ", key);
    uint32_t t = c.read<uint32_t>("value type");
    if (!valid_value_type(t)) fail(name, ": key ", key, " has unknown value type ", t);
    GgufValue v = read_value(c, static_cast<GgufType>(t), key, 0, name);
    kv_.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = get("general.alignment")) {
    if (!a->is_integer()) fail(name, ": general.alignment must be an integer, not ", type_word(*a));
    if (!is_unsigned(a->type) && a->i < 0) fail(name, ": general.alignment ", a->i, " is negative");
    uint64_t al = a->u;
    if (al == 0 || (al & (al - 1)) != 0 || al > (1u << 30))
      fail(name, ": general.alignment ", al, " is not a nonzero power of two (at most 2^30)");
    alignment_ = al;
  }
}

void GgufFile::read_tensor_infos(Cursor& c, uint64_t n_tensors) {
  const std::string& name = name_;
  std::unordered_set<std::string> seen;
  tensors_.reserve(static_cast<size_t>(n_tensors));
  offsets_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    TensorInfo t;
    t.name = c.read_string("tensor name");
    if (!seen.insert(t.name).second) fail(name, ": duplicate tensor name ", t.name);
    uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      fail(name, ": tensor ", t.name, " has ", n_dims, " dimensions (must be 1 to ", kMaxDims, ")");
    int64_t ne[kMaxDims];
    for (uint32_t d = 0; d < n_dims; ++d) {
      ne[d] = c.read<int64_t>("tensor dimension");
      if (ne[d] <= 0) fail(name, ": tensor ", t.name, " dimension ", d, " is ", ne[d], " (must be positive)");
    }
    int64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (numel > std::numeric_limits<int64_t>::max() / ne[d])
        fail(name, ": tensor ", t.name, ": element count overflows 64 bits");
      numel *= ne[d];
    }
    t.type_id = c.read<uint32_t>("tensor type");
    uint64_t offset = c.read<uint64_t>("tensor offset");
    const DTypeInfo* info = dtype_info(t.type_id);
    if (!info || info->internal)
      fail(name, ": tensor ", t.name, " has unknown ggml type id ", t.type_id, " (its size is unknown)");
    t.type_name = info->name;
    t.known_type = info->computable;
    if (ne[0] % info->block != 0)
      fail(name, ": tensor ", t.name, ": row length ", ne[0], " is not a multiple of the ", info->name,
           " block size ", info->block);
    // numel <= 2^63 and block_bytes <= 292: bytes fit in unsigned 128 arithmetic; check against 2^63.
    unsigned __int128 bytes =
        static_cast<unsigned __int128>(numel / info->block) * static_cast<unsigned __int128>(info->block_bytes);
    if (bytes > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()))
      fail(name, ": tensor ", t.name, ": byte size overflows 64 bits");
    t.nbytes = static_cast<uint64_t>(bytes);
    for (int d = static_cast<int>(n_dims) - 1; d >= 0; --d) t.shape.push_back(ne[d]);
    tensors_.push_back(std::move(t));
    offsets_.push_back(offset);
  }
}

void GgufFile::place_tensors(const uint8_t* data, size_t size) {
  const std::string& name = name_;
  if (tensors_.empty()) return;  // vocab-only files may end before the (empty) data section
  if (data_offset_ > size)
    fail(name, ": data section would start at byte ", data_offset_, ", past the end of the file (", size, " bytes)");
  uint64_t avail = size - data_offset_;
  std::vector<size_t> order(tensors_.size());
  for (size_t k = 0; k < order.size(); ++k) {
    TensorInfo& t = tensors_[k];
    uint64_t off = offsets_[k];
    if (off % alignment_ != 0)
      fail(name, ": tensor ", t.name, " offset ", off, " is not a multiple of the alignment ", alignment_);
    if (off > avail || t.nbytes > avail - off)
      fail(name, ": tensor ", t.name, " (", t.nbytes, " bytes at data offset ", off,
           ") lies past the end of the file (the data section holds ", avail, " bytes)");
    t.data = data + data_offset_ + off;
    order[k] = k;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return offsets_[a] < offsets_[b]; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = tensors_[order[k - 1]];
    if (offsets_[order[k - 1]] + prev.nbytes > offsets_[order[k]])
      fail(name, ": tensors ", prev.name, " and ", tensors_[order[k]].name, " overlap in the data section");
  }
}

size_t GgufFile::metadata_bytes() const {
  size_t n = kv_.capacity() * sizeof(kv_[0]);
  for (const auto& [key, value] : kv_) n += key.capacity() + value.storage_bytes();
  return n;
}

const GgufValue* GgufFile::get(std::string_view key) const {
  for (const auto& kv : kv_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

const TensorInfo* GgufFile::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::STRING) fail(name_, ": ", key, " must be a string, not ", type_word(*v));
  return v->s;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) fail(name_, ": ", key, " must be an integer, not ", type_word(*v));
  if (v->type == GgufType::U64 && v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(name_, ": ", key, " value ", v->u, " is too large");
  return v->i;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->is_integer()) return is_unsigned(v->type) ? static_cast<double>(v->u) : static_cast<double>(v->i);
  fail(name_, ": ", key, " must be a number, not ", type_word(*v));
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::BOOL) fail(name_, ": ", key, " must be a bool, not ", type_word(*v));
  return v->b;
}

const GgufArray* GgufFile::string_array(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return nullptr;
  if (v->type != GgufType::ARRAY || v->arr.type() != GgufType::STRING)
    fail(name_, ": ", key, " must be an array of strings");
  return &v->arr;
}

const GgufArray* GgufFile::int_array(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return nullptr;
  if (v->type != GgufType::ARRAY || !is_integer_type(v->arr.type()))
    fail(name_, ": ", key, " must be an array of integers");
  return &v->arr;
}

const GgufArray* GgufFile::number_array(std::string_view key) const {
  const GgufValue* v = get(key);
  if (!v) return nullptr;
  const GgufType t = v->arr.type();
  if (v->type != GgufType::ARRAY ||
      !(v->arr.empty() || is_integer_type(t) || t == GgufType::F32 || t == GgufType::F64))
    fail(name_, ": ", key, " must be an array of numbers");
  return &v->arr;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const GgufArray* a = string_array(key);
  if (!a) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(a->size());
  for (size_t k = 0; k < a->size(); ++k) out.emplace_back(a->string_at(k));
  return out;
}

std::optional<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  const GgufArray* a = number_array(key);
  if (!a) return std::nullopt;
  std::vector<double> out;
  out.reserve(a->size());
  for (size_t k = 0; k < a->size(); ++k) out.push_back(a->number_at(k));
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufArray* a = int_array(key);
  if (!a) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(a->size());
  for (size_t k = 0; k < a->size(); ++k) {
    if (a->type() == GgufType::U64 && a->int_at(k) < 0)
      fail(name_, ": ", key, " holds a value too large for 64-bit signed");
    out.push_back(a->int_at(k));
  }
  return out;
}

}  // namespace og
