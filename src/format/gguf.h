// GGUF v2/v3: reader over a mapped file (or any byte span) and writer.
// Every count, length and offset is checked against the real size before any
// allocation or read; a bad file is one og::Error naming the file and problem.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mapped_file.h"
#include "format/tensor_source.h"

namespace og {

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_type_name(GgufType t);

struct GgufValue;

// The elements of one metadata array, kept as their GGUF encoding (little-endian
// values; strings and nested arrays length-prefixed as on disk) so that an array
// takes about the memory it takes in the file, not a GgufValue per element
// (a 17 MB u8 array once cost 1.7 GB). Elements are decoded on demand.
class GgufArray {
 public:
  GgufArray() = default;
  GgufArray(GgufType elem, const std::vector<GgufValue>& elems);  // og::Error if an element is not of type elem
  // Takes bytes the GGUF reader has validated: n elements of type elem; starts
  // holds each element's offset for strings and arrays (empty for fixed sizes).
  static GgufArray adopt(GgufType elem, uint64_t n, std::vector<uint8_t> bytes, std::vector<uint64_t> starts);

  GgufType type() const { return elem_; }
  size_t size() const { return static_cast<size_t>(n_); }
  bool empty() const { return n_ == 0; }
  GgufValue operator[](size_t k) const;       // element k, decoded
  std::string_view string_at(size_t k) const;  // element k of a string array, no copy
  // Element k of an integer array (a u64 past INT64_MAX as its bit pattern),
  // or of a number array as a double, decoded in place; og::Error otherwise.
  int64_t int_at(size_t k) const;
  double number_at(size_t k) const;
  const std::vector<uint8_t>& bytes() const { return bytes_; }  // the elements' GGUF encoding
  size_t storage_bytes() const;                // heap bytes held, for accounting and tests
  bool operator==(const GgufArray& o) const;   // element-wise (GgufValue::operator==)

  class Iterator {
   public:
    Iterator(const GgufArray* a, size_t k) : a_(a), k_(k) {}
    GgufValue operator*() const;
    Iterator& operator++() { ++k_; return *this; }
    bool operator!=(const Iterator& o) const { return k_ != o.k_; }
   private:
    const GgufArray* a_;
    size_t k_;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size()); }

 private:
  size_t element_end(size_t k) const;
  GgufType elem_ = GgufType::U8;
  uint64_t n_ = 0;
  std::vector<uint8_t> bytes_;
  std::vector<uint64_t> starts_;
};

// One metadata value. Scalars use one of u/i/f/b/s; arrays hold their
// elements in arr (arrays of arrays nest; arr.type() is the element type).
struct GgufValue {
  GgufType type = GgufType::U8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  GgufArray arr;

  static GgufValue make_u32(uint32_t v);
  static GgufValue make_i32(int32_t v);
  static GgufValue make_u64(uint64_t v);
  static GgufValue make_f32(float v);
  static GgufValue make_bool(bool v);
  static GgufValue make_string(std::string v);
  static GgufValue make_array(GgufType elem, const std::vector<GgufValue>& elems);
  static GgufValue make_int(GgufType t, int64_t v);  // any integer type t (u64 via the bit pattern)
  static GgufValue make_f64(double v);
  bool is_integer() const;
  bool is_float() const;
  bool operator==(const GgufValue& o) const;  // same type and value (arrays: element-wise)
  size_t storage_bytes() const;               // heap bytes held (string and array storage)
};

// Appends v's GGUF encoding (no type tag) to out.
void gguf_encode_value(std::vector<uint8_t>& out, const GgufValue& v);

class GgufCursor;

class GgufFile : public TensorSource {
 public:
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses bytes the caller keeps alive (fuzzers, tests). `name` is used in messages.
  static std::unique_ptr<GgufFile> parse(const uint8_t* data, size_t size, std::string name);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* get(std::string_view key) const;
  // Heap bytes the parsed metadata holds (keys, strings, arrays): about the
  // metadata's size in the file, whatever its shape.
  size_t metadata_bytes() const;

  // Typed access; nullopt when absent; og::Error naming the key on a wrong type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;   // any integer type
  std::optional<double> get_float(std::string_view key) const;  // f32/f64 (and integers)
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<double>> get_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
  // The same arrays read in place (string_at, int_at, number_at), with no
  // copy of their elements: a vocabulary's arrays are its largest metadata,
  // and a vector<int64_t> of a u8 array is 8 times its size. nullptr when
  // absent; og::Error naming the key when the elements are of another kind.
  const GgufArray* string_array(std::string_view key) const;
  const GgufArray* int_array(std::string_view key) const;
  const GgufArray* number_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  const TensorInfo* find(std::string_view name) const override;
  std::string source_name() const override { return name_; }

 private:
  GgufFile() = default;
  void parse_bytes(const uint8_t* data, size_t size);
  void read_metadata(GgufCursor& c, uint64_t n_kv);
  void read_tensor_infos(GgufCursor& c, uint64_t n_tensors);
  void place_tensors(const uint8_t* data, size_t size);
  MappedFile file_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<TensorInfo> tensors_;
  std::vector<uint64_t> offsets_;  // per tensor, relative to data_offset_
};

// Writes a GGUF v3 file: metadata in the order added, tensors padded to the alignment.
class GgufWriter {
 public:
  void set(std::string key, GgufValue v);  // replaces an existing key
  // shape row-major (outermost first); bytes must be dtype_row_bytes(type, shape.back()) * rows.
  void add_tensor(std::string name, DType type, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  // Streaming form for large models: make() runs during write()/serialize(), one
  // tensor at a time in order, and must return exactly the tensor's bytes.
  using Producer = std::function<std::vector<uint8_t>()>;
  void add_tensor(std::string name, DType type, std::vector<int64_t> shape, Producer make);
  void write(const std::string& path) const;         // throws og::Error naming the path
  std::vector<uint8_t> serialize() const;

 private:
  std::vector<std::pair<std::string, GgufValue>> kv_;
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
    Producer make;  // when set, bytes is empty until write time
    uint64_t nbytes = 0;
  };
  uint64_t alignment() const;
  std::vector<uint8_t> header() const;  // everything before the data section, padded
  std::vector<Tensor> tensors_;
};

}  // namespace og
