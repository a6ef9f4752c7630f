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

// One metadata value. Scalars use one of u/i/f/b/s; arrays hold elements of
// arr_type in arr (arrays of arrays nest).
struct GgufValue {
  GgufType type = GgufType::U8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  GgufType arr_type = GgufType::U8;
  std::vector<GgufValue> arr;

  static GgufValue make_u32(uint32_t v);
  static GgufValue make_i32(int32_t v);
  static GgufValue make_u64(uint64_t v);
  static GgufValue make_f32(float v);
  static GgufValue make_bool(bool v);
  static GgufValue make_string(std::string v);
  static GgufValue make_array(GgufType elem, std::vector<GgufValue> elems);
  static GgufValue make_int(GgufType t, int64_t v);  // any integer type t (u64 via the bit pattern)
  static GgufValue make_f64(double v);
  bool is_integer() const;
  bool is_float() const;
  bool operator==(const GgufValue& o) const;  // same type and value (arrays: element-wise)
};

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

  // Typed access; nullopt when absent; og::Error naming the key on a wrong type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;   // any integer type
  std::optional<double> get_float(std::string_view key) const;  // f32/f64 (and integers)
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<double>> get_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;

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
