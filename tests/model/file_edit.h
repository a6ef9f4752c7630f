// Test helpers that copy a GGUF file or an HF checkpoint with edits
// (metadata set/dropped, tensors dropped/replaced/added), for bad-file and
// layout tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/safetensors.h"

namespace og::test {

struct GgufEdit {
  std::set<std::string> drop_keys, drop_tensors;
  std::vector<std::pair<std::string, GgufValue>> set_keys;
  // Called with the writer after the copied tensors, to add more.
  std::function<void(GgufWriter&)> add;
  // Replaces a tensor (name -> writer call) instead of copying it.
  std::function<bool(const TensorInfo&, GgufWriter&)> replace;
};

inline void rewrite_gguf(const std::string& src, const std::string& dst, const GgufEdit& e) {
  std::unique_ptr<GgufFile> f = GgufFile::open(src);
  GgufWriter w;
  for (const auto& [k, v] : f->metadata())
    if (!e.drop_keys.count(k)) w.set(k, v);
  for (const auto& [k, v] : e.set_keys) w.set(k, v);
  for (const TensorInfo& t : f->tensors()) {
    if (e.drop_tensors.count(t.name)) continue;
    if (e.replace && e.replace(t, w)) continue;
    w.add_tensor(t.name, static_cast<DType>(t.type_id), t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  if (e.add) e.add(w);
  w.write(dst);
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

struct HfEdit {
  std::function<void(nlohmann::json&)> config;  // edits config.json
  std::set<std::string> drop_tensors;
  std::function<std::string(const std::string&)> rename;  // tensor name -> new name
  std::vector<SafetensorsTensor> add;                     // extra tensors
};

// Copies an HF checkpoint directory (config.json edited, model.safetensors
// rewritten without the dropped tensors, other files copied as they are).
inline void rewrite_hf(const std::string& src, const std::string& dst, const HfEdit& e) {
  namespace fs = std::filesystem;
  fs::create_directories(dst);
  for (const auto& entry : fs::directory_iterator(src)) {
    const std::string name = entry.path().filename().string();
    if (name == "config.json" || name.ends_with(".safetensors") || name.ends_with(".index.json")) continue;
    fs::copy_file(entry.path(), fs::path(dst) / name, fs::copy_options::overwrite_existing);
  }
  nlohmann::json cfg = read_json_file(src + "/config.json");
  if (e.config) e.config(cfg);
  std::ofstream(dst + "/config.json") << cfg.dump(2);
  std::unique_ptr<SafetensorsSource> st = SafetensorsSource::open_dir(src);
  std::vector<SafetensorsTensor> out;
  for (const TensorInfo& t : st->tensors()) {
    if (e.drop_tensors.count(t.name)) continue;
    SafetensorsTensor o;
    o.name = e.rename ? e.rename(t.name) : t.name;
    o.dtype = t.type_name;  // the safetensors dtype as stored ("F32", "BF16", "U8", ...)
    o.shape = t.shape;
    o.bytes.assign(t.data, t.data + t.nbytes);
    out.push_back(std::move(o));
  }
  for (const SafetensorsTensor& t : e.add) out.push_back(t);
  write_safetensors(dst + "/model.safetensors", out);
}

}  // namespace og::test
