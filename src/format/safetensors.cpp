// safetensors reader (one file, or shards named by model.safetensors.index.json)
// and writer. Every header field is type-checked and every data range is
// checked against the real data size before use.
#include "format/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "format/hf_config.h"
#include "tensor/dtype.h"

namespace og {

namespace {

struct StDtype {
  const char* name;
  int64_t elem_bytes;
  uint32_t type_id;  // ggml id where one exists, else kNoGgmlId
  bool usable;
};
constexpr uint32_t kNoGgmlId = 0xffffffffu;
// clang-format off
constexpr StDtype kDtypes[] = {
  {"F32", 4, 0, true}, {"F16", 2, 1, true}, {"BF16", 2, 30, true},
  {"F64", 8, 28, false}, {"I64", 8, 27, false}, {"I32", 4, 26, false}, {"I16", 2, 25, false},
  {"I8", 1, 24, false}, {"U8", 1, kNoGgmlId, false}, {"U16", 2, kNoGgmlId, false},
  {"U32", 4, kNoGgmlId, false}, {"U64", 8, kNoGgmlId, false}, {"BOOL", 1, kNoGgmlId, false},
  {"F8_E4M3", 1, kNoGgmlId, false}, {"F8_E5M2", 1, kNoGgmlId, false},
};
// clang-format on

const StDtype* find_dtype(const std::string& s) {
  for (const auto& d : kDtypes)
    if (s == d.name) return &d;
  return nullptr;
}

// A JSON value that is a non-negative integer (as an unsigned 64-bit value).
bool as_u64(const nlohmann::json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0) return false;
    *out = static_cast<uint64_t>(i);
    return true;
  }
  return false;
}

struct Range {
  uint64_t begin, end;
  size_t index;
};

}  // namespace

std::unique_ptr<SafetensorsSource> SafetensorsSource::open_file(const std::string& path) {
  std::unique_ptr<SafetensorsSource> s(new SafetensorsSource());
  s->name_ = path;
  s->files_.push_back(MappedFile::open(path));
  s->add_file(s->files_.back().data(), s->files_.back().size(), path);
  return s;
}

std::unique_ptr<SafetensorsSource> SafetensorsSource::parse(const uint8_t* data, size_t size, std::string name) {
  std::unique_ptr<SafetensorsSource> s(new SafetensorsSource());
  s->name_ = name;
  s->add_file(data, size, name);
  return s;
}

std::unique_ptr<SafetensorsSource> SafetensorsSource::open_dir(const std::string& dir) {
  std::string index_path = dir + "/model.safetensors.index.json";
  if (!entry_exists(index_path)) {
    std::string single = dir + "/model.safetensors";
    if (!entry_exists(single)) fail(dir, ": no model.safetensors or model.safetensors.index.json");
    auto s = open_file(single);
    s->name_ = dir;
    return s;
  }
  nlohmann::json index = read_json_file(index_path);
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) fail(index_path, ": weight_map must be an object");
  std::unique_ptr<SafetensorsSource> s(new SafetensorsSource());
  s->name_ = dir;
  std::vector<std::string> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it->is_string()) fail(index_path, ": weight_map entry ", it.key(), " must be a shard file name");
    std::string shard = it->get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      fail(index_path, ": weight_map entry ", it.key(), " names '", shard, "', not a file in the directory");
    if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.push_back(shard);
  }
  s->files_.reserve(shards.size());
  std::vector<std::string> owner;  // shard of each tensor, parallel to tensors_
  for (const auto& shard : shards) {
    std::string path = dir + "/" + shard;
    if (!file_exists(path)) fail(index_path, ": shard ", shard, " is missing from ", dir);
    s->files_.push_back(MappedFile::open(path));
    s->add_file(s->files_.back().data(), s->files_.back().size(), path);
    owner.resize(s->tensors_.size(), shard);
  }
  std::map<std::string_view, const std::string*> shard_of;  // tensor name -> shard holding it
  for (size_t k = 0; k < s->tensors_.size(); ++k) shard_of[s->tensors_[k].name] = &owner[k];
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    const std::string& shard = it->get_ref<const std::string&>();
    auto found = shard_of.find(it.key());
    if (found == shard_of.end() || *found->second != shard)
      fail(index_path, ": tensor ", it.key(), " is not in its shard ", shard);
  }
  return s;
}

void SafetensorsSource::add_file(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 8) fail(name, ": too small to be a safetensors file (", size, " bytes)");
  uint64_t n;
  std::memcpy(&n, data, 8);
  if (n > size - 8) fail(name, ": header length ", n, " is past the end of the file (", size, " bytes)");
  std::string text(reinterpret_cast<const char*>(data + 8), static_cast<size_t>(n));
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(name, ": header is not valid JSON (", e.what(), ")");
  }
  if (!h.is_object()) fail(name, ": header is not a JSON object");
  const uint8_t* base = data + 8 + n;
  uint64_t avail = size - 8 - n;
  std::vector<Range> ranges;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& key = it.key();
    if (key == "__metadata__") {
      if (!it->is_object()) fail(name, ": __metadata__ must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail(name, ": __metadata__ value ", m.key(), " must be a string");
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const nlohmann::json& e = *it;
    if (!e.is_object()) fail(name, ": tensor ", key, ": entry must be an object");
    auto dt = e.find("dtype");
    if (dt == e.end() || !dt->is_string()) fail(name, ": tensor ", key, ": dtype must be a string");
    const StDtype* d = find_dtype(dt->get<std::string>());
    if (!d) fail(name, ": tensor ", key, ": unknown dtype ", dt->get<std::string>());
    auto sh = e.find("shape");
    if (sh == e.end() || !sh->is_array()) fail(name, ": tensor ", key, ": shape must be an array");
    TensorInfo t;
    t.name = key;
    uint64_t numel = 1;
    for (const auto& dim : *sh) {
      uint64_t v;
      if (!as_u64(dim, &v)) fail(name, ": tensor ", key, ": shape must hold non-negative integers");
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (v != 0 && numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / v))
        fail(name, ": tensor ", key, ": shape overflows 64 bits");
      numel *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d->elem_bytes))
      fail(name, ": tensor ", key, ": byte size overflows 64 bits");
    auto offs = e.find("data_offsets");
    uint64_t b = 0, en = 0;
    if (offs == e.end() || !offs->is_array() || offs->size() != 2 || !as_u64((*offs)[0], &b) ||
        !as_u64((*offs)[1], &en))
      fail(name, ": tensor ", key, ": data_offsets must be [begin, end] non-negative integers");
    if (b > en) fail(name, ": tensor ", key, ": data_offsets begin ", b, " is after end ", en);
    if (en > avail)
      fail(name, ": tensor ", key, ": data_offsets [", b, ", ", en, ") run past the end of the data (", avail,
           " bytes)");
    uint64_t need = numel * static_cast<uint64_t>(d->elem_bytes);
    if (en - b != need)
      fail(name, ": tensor ", key, ": data_offsets span ", en - b, " bytes but shape ", shape_str(t.shape), " of ",
           d->name, " needs ", need);
    if (!names_.insert(key).second) fail(name, ": tensor ", key, " appears in more than one shard");
    t.type_id = d->type_id;
    t.type_name = d->name;
    t.known_type = d->usable;
    t.data = base + b;
    t.nbytes = need;
    ranges.push_back({b, en, tensors_.size()});
    tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& x, const Range& y) { return x.begin < y.begin; });
  for (size_t k = 1; k < ranges.size(); ++k)
    if (ranges[k - 1].end > ranges[k].begin)
      fail(name, ": tensors ", tensors_[ranges[k - 1].index].name, " and ", tensors_[ranges[k].index].name,
           " overlap");
}

const TensorInfo* SafetensorsSource::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const auto& t : tensors) {
    const StDtype* d = find_dtype(t.dtype);
    OG_CHECK(d, path, ": tensor ", t.name, ": unknown safetensors dtype ", t.dtype);
    uint64_t numel = 1;
    for (int64_t s : t.shape) {
      OG_CHECK(s >= 0, path, ": tensor ", t.name, " has a negative dimension");
      numel *= static_cast<uint64_t>(s);
    }
    uint64_t n = numel * static_cast<uint64_t>(d->elem_bytes);
    OG_CHECK(t.make || t.bytes.size() == n, path, ": tensor ", t.name, " needs ", n, " bytes, got ", t.bytes.size());
    OG_CHECK(!h.contains(t.name), path, ": duplicate tensor ", t.name);
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    sizes.push_back(n);
    offset += n;
  }
  std::string text = h.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail(path, ": cannot create: ", std::strerror(errno));
  auto put = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) fail(path, ": write failed: ", std::strerror(errno));
  };
  uint64_t hl = text.size();
  put(&hl, 8);
  put(text.data(), text.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (tensors[k].make) {
      std::vector<uint8_t> b = tensors[k].make();
      OG_CHECK(b.size() == sizes[k], path, ": tensor ", tensors[k].name, " producer gave ", b.size(),
               " bytes, expected ", sizes[k]);
      put(b.data(), b.size());
    } else {
      put(tensors[k].bytes.data(), tensors[k].bytes.size());
    }
  }
  if (std::fclose(f.release()) != 0) fail(path, ": write failed: ", std::strerror(errno));
}

}  // namespace og
