// GGUF v3 writer: metadata in insertion order, tensor infos, then tensor data
// each padded to the alignment (general.alignment when set, else 32).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "format/gguf.h"
#include "tensor/dtype.h"

namespace og {

namespace {

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  size_t at = out.size();
  out.resize(at + s.size());
  if (!s.empty()) std::memcpy(out.data() + at, s.data(), s.size());
}

}  // namespace

void gguf_encode_value(std::vector<uint8_t>& out, const GgufValue& v) {
  switch (v.type) {
    case GgufType::U8: put<uint8_t>(out, static_cast<uint8_t>(v.u)); break;
    case GgufType::I8: put<int8_t>(out, static_cast<int8_t>(v.i)); break;
    case GgufType::U16: put<uint16_t>(out, static_cast<uint16_t>(v.u)); break;
    case GgufType::I16: put<int16_t>(out, static_cast<int16_t>(v.i)); break;
    case GgufType::U32: put<uint32_t>(out, static_cast<uint32_t>(v.u)); break;
    case GgufType::I32: put<int32_t>(out, static_cast<int32_t>(v.i)); break;
    case GgufType::U64: put<uint64_t>(out, v.u); break;
    case GgufType::I64: put<int64_t>(out, v.i); break;
    case GgufType::F32: put<float>(out, static_cast<float>(v.f)); break;
    case GgufType::F64: put<double>(out, v.f); break;
    case GgufType::BOOL: put<uint8_t>(out, v.b ? 1 : 0); break;
    case GgufType::STRING: put_string(out, v.s); break;
    case GgufType::ARRAY:
      put<uint32_t>(out, static_cast<uint32_t>(v.arr.type()));
      put<uint64_t>(out, v.arr.size());
      out.insert(out.end(), v.arr.bytes().begin(), v.arr.bytes().end());
      break;
  }
}

// Encodes the elements once, as the reader stores them (see GgufArray).
GgufArray::GgufArray(GgufType elem, const std::vector<GgufValue>& elems) : elem_(elem), n_(elems.size()) {
  const bool variable = elem == GgufType::STRING || elem == GgufType::ARRAY;
  for (const GgufValue& e : elems) {
    OG_CHECK(e.type == elem, "GGUF array of ", gguf_type_name(elem), " holds a ", gguf_type_name(e.type));
    if (variable) starts_.push_back(bytes_.size());
    gguf_encode_value(bytes_, e);
  }
}

namespace {

uint64_t pad_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

void GgufWriter::set(std::string key, GgufValue v) {
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  kv_.emplace_back(std::move(key), std::move(v));
}

namespace {
uint64_t expected_bytes(const std::string& name, DType type, const std::vector<int64_t>& shape) {
  OG_CHECK(!shape.empty() && shape.size() <= 4, "GGUF writer: tensor ", name, " must have 1 to 4 dimensions");
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    OG_CHECK(shape[d] > 0, "GGUF writer: tensor ", name, " has a non-positive dimension");
    rows *= shape[d];
  }
  OG_CHECK(shape.back() > 0, "GGUF writer: tensor ", name, " has a non-positive dimension");
  return static_cast<uint64_t>(rows) * static_cast<uint64_t>(dtype_row_bytes(type, shape.back()));
}
}  // namespace

void GgufWriter::add_tensor(std::string name, DType type, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
  uint64_t n = expected_bytes(name, type, shape);
  OG_CHECK(bytes.size() == n, "GGUF writer: tensor ", name, " ", shape_str(shape), " ", dtype_name(uint32_t(type)),
           " needs ", n, " bytes, got ", bytes.size());
  for (const auto& t : tensors_) OG_CHECK(t.name != name, "GGUF writer: duplicate tensor ", name);
  tensors_.push_back({std::move(name), type, std::move(shape), std::move(bytes), nullptr, n});
}

void GgufWriter::add_tensor(std::string name, DType type, std::vector<int64_t> shape, Producer make) {
  uint64_t n = expected_bytes(name, type, shape);
  for (const auto& t : tensors_) OG_CHECK(t.name != name, "GGUF writer: duplicate tensor ", name);
  tensors_.push_back({std::move(name), type, std::move(shape), {}, std::move(make), n});
}

uint64_t GgufWriter::alignment() const {
  for (const auto& kv : kv_)
    if (kv.first == "general.alignment") {
      uint64_t a = kv.second.u;
      OG_CHECK(kv.second.is_integer() && a != 0 && (a & (a - 1)) == 0,
               "GGUF writer: general.alignment must be a nonzero power of two");
      return a;
    }
  return 32;
}

std::vector<uint8_t> GgufWriter::header() const {
  std::vector<uint8_t> out;
  put<uint32_t>(out, 0x46554747);
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_.size());
  for (const auto& kv : kv_) {
    put_string(out, kv.first);
    put<uint32_t>(out, static_cast<uint32_t>(kv.second.type));
    gguf_encode_value(out, kv.second);
  }
  uint64_t align = alignment();
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;) put<int64_t>(out, t.shape[d]);  // ne[] fastest first
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset += pad_to(t.nbytes, align);
  }
  out.resize(pad_to(out.size(), align), 0);
  return out;
}

std::vector<uint8_t> GgufWriter::serialize() const {
  std::vector<uint8_t> out = header();
  uint64_t align = alignment();
  for (const auto& t : tensors_) {
    if (t.make) {
      std::vector<uint8_t> b = t.make();
      OG_CHECK(b.size() == t.nbytes, "GGUF writer: tensor ", t.name, " producer gave ", b.size(), " bytes, expected ",
               t.nbytes);
      out.insert(out.end(), b.begin(), b.end());
    } else {
      out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    }
    out.resize(pad_to(out.size(), align), 0);
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail(path, ": cannot create: ", std::strerror(errno));
  auto put_bytes = [&](const uint8_t* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) fail(path, ": write failed: ", std::strerror(errno));
  };
  std::vector<uint8_t> h = header();
  put_bytes(h.data(), h.size());
  uint64_t align = alignment();
  static const uint8_t kZeros[256] = {};
  for (const auto& t : tensors_) {
    if (t.make) {
      std::vector<uint8_t> b = t.make();
      OG_CHECK(b.size() == t.nbytes, "GGUF writer: tensor ", t.name, " producer gave ", b.size(),
               " bytes, expected ", t.nbytes);
      put_bytes(b.data(), b.size());
    } else {
      put_bytes(t.bytes.data(), t.bytes.size());
    }
    for (uint64_t pad = pad_to(t.nbytes, align) - t.nbytes; pad > 0;) {
      size_t n = static_cast<size_t>(pad < sizeof(kZeros) ? pad : sizeof(kZeros));
      put_bytes(kZeros, n);
      pad -= n;
    }
  }
  if (std::fclose(f.release()) != 0) fail(path, ": write failed: ", std::strerror(errno));
}

}  // namespace og
