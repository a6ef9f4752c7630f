// export_hf_to_gguf and quantize_gguf (see gguf_convert.h): plan the output
// tensors, stream them through the row codecs into a GgufWriter, read the
// written file back, then rename it into place.
#include "model/gguf_convert.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "format/chat_template_source.h"
#include "format/model_source.h"
#include "kernels/ops.h"
#include "model/gguf_export.h"
#include "model/kv_keys.h"
#include "model/loader.h"
#include "model/tensor_codec.h"

namespace og {
namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
std::string name_of(DType t) { return dtype_name(static_cast<uint32_t>(t)); }

// One output tensor: where its values come from and what it becomes.
struct Job {
  std::string name;
  std::vector<int64_t> shape;  // row-major
  DType to = DType::F32;
  const TensorInfo* src = nullptr;  // null: plan.generated, or the stack
  std::vector<const TensorInfo*> stack;  // export: the sources stacked along dim 0 (plan.stack_sources)
  GgufTensorPlan plan;              // export: row order and value fixes; quantize: none
  bool matrix = false;              // converted row by row over the pool
  bool copy = false;                // the source bytes as stored
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The source row of output row r (gguf_export.h): the inverse of the q/k
// permutation, a fused experts half's row, else r.
int64_t source_row(const GgufTensorPlan& p, int64_t r) { return gguf_source_row(p, r); }

// Source rows are converted in blocks of about this many bytes, each block's
// file pages dropped once it is done, so the source of a large tensor (a
// 128k-token embedding) is never resident whole.
constexpr int64_t kBlockBytes = int64_t{32} << 20;

// Converts `rows` rows of a matrix source (from its first row) into out
// (rows of dtype `to`), in blocks whose source pages are dropped as they finish.
void convert_matrix(const TensorInfo& src, int64_t rows, int64_t cols, const GgufTensorPlan& plan, DType to,
                    uint8_t* out) {
  const DType from = static_cast<DType>(src.type_id);
  const int64_t rb_in = dtype_row_bytes(from, cols), rb_out = dtype_row_bytes(to, cols);
  // Permuted rows come from within their head; a block of whole heads reads only its own rows.
  const int64_t unit = plan.permute_heads > 0 ? plan.permute_head_dim : 1;
  const int64_t block = std::max<int64_t>(1, kBlockBytes / (rb_in * unit)) * unit;
  for (int64_t b0 = 0; b0 < rows; b0 += block) {
    const int64_t b1 = std::min(rows, b0 + block);
    thread_pool().parallel_for(b1 - b0, [&](int64_t r0, int64_t r1) {
      std::vector<float> buf(static_cast<size_t>(cols));
      for (int64_t r = b0 + r0; r < b0 + r1; ++r) {
        kernels::dequantize_row(from, src.data + source_row(plan, r) * rb_in, buf.data(), cols);
        kernels::quantize_row(to, buf.data(), out + r * rb_out, cols);
      }
    });
    release_file_pages(src.data + b0 * rb_in, static_cast<size_t>((b1 - b0) * rb_in));
  }
}

std::vector<uint8_t> run_job(const Job& j) {
  const int64_t cols = j.shape.back(), rows = numel(j.shape) / cols;
  if (!j.stack.empty()) {  // one part of rows / stack.size() rows per source
    const int64_t part = rows / static_cast<int64_t>(j.stack.size()), rb_out = dtype_row_bytes(j.to, cols);
    std::vector<uint8_t> out(static_cast<size_t>(rows * rb_out));
    for (size_t i = 0; i < j.stack.size(); ++i)
      convert_matrix(*j.stack[i], part, cols, j.plan, j.to, out.data() + static_cast<int64_t>(i) * part * rb_out);
    return out;
  }
  if (j.src == nullptr) return encode_rows(j.to, j.plan.generated.data(), rows, cols);
  const DType from = static_cast<DType>(j.src->type_id);
  std::vector<uint8_t> out;
  if (j.copy) {
    out.resize(static_cast<size_t>(j.src->nbytes));
    for (uint64_t b0 = 0; b0 < j.src->nbytes; b0 += kBlockBytes) {
      const uint64_t n = std::min<uint64_t>(kBlockBytes, j.src->nbytes - b0);
      std::copy(j.src->data + b0, j.src->data + b0 + n, out.data() + b0);
      release_file_pages(j.src->data + b0, n);
    }
    return out;
  }
  if (!j.matrix) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    decode_rows(from, j.src->data, rows, cols, v.data());
    apply_gguf_fixes(j.plan, v);
    release_file_pages(j.src->data, j.src->nbytes);  // the source is a read-only file mapping
    return encode_rows(j.to, v.data(), rows, cols);
  }
  OG_CHECK(j.plan.add == 0, "GGUF export: matrix ", j.name, " cannot take a value offset");
  out.resize(static_cast<size_t>(rows * dtype_row_bytes(j.to, cols)));
  convert_matrix(*j.src, rows, cols, j.plan, j.to, out.data());
  return out;
}

int64_t source_bytes(const Job& j) {
  int64_t n = j.src ? static_cast<int64_t>(j.src->nbytes) : 0;
  for (const TensorInfo* t : j.stack) n += static_cast<int64_t>(t->nbytes);
  return n;
}

// Adds every job to w as a streaming producer, writes the file atomically,
// verifies it, and returns the summary.
ConvertSummary write_jobs(GgufWriter& w, const std::vector<Job>& jobs, const ConvertOptions& o, AtomicOutput& out,
                          const std::function<void(const std::string&)>& verify) {
  ConvertSummary s;
  Timer total;
  s.n_tensors = static_cast<int>(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    s.dtype_counts[name_of(j.to)]++;
    s.n_elements += numel(j.shape);
    w.add_tensor(j.name, j.to, j.shape, GgufWriter::Producer([&, i] {
                   const Job& job = jobs[i];
                   Timer t;
                   std::vector<uint8_t> b = run_job(job);
                   ConvertProgress p;
                   p.index = static_cast<int>(i) + 1;
                   p.count = static_cast<int>(jobs.size());
                   p.name = job.name;
                   p.from = job.src ? job.src->type_name : job.stack.empty() ? "generated" : job.stack[0]->type_name;
                   p.to = name_of(job.to);
                   p.bytes_in = source_bytes(job);
                   p.bytes_out = static_cast<int64_t>(b.size());
                   p.seconds = t.seconds();
                   s.bytes_in += p.bytes_in;
                   s.bytes_out += p.bytes_out;
                   if (o.on_tensor) o.on_tensor(p);
                   return b;
                 }));
  }
  w.write(out.path());
  if (!out.in_place()) verify(out.path());
  out.commit();
  s.seconds = total.seconds();
  return s;
}

// The read-back check: the written file loads as `want` (config and every
// tensor bound) and its cache geometry keys agree with its architecture.
void verify_written(const std::string& path, const std::string& out_path, const ModelConfig& want) {
  GgufModelSource m = read_gguf_model(path);
  validate_config(m.config, out_path);
  bind_weights(m.config, *m.file);
  check_same_config(want, m.config, out_path);
  if (std::optional<KvGeometry> g = read_kv_geometry_keys(*m.file))
    check_kv_geometry(*g, kv_geometry_from_config(m.config), out_path);
}

int64_t chunk_of(const ConvertOptions& o, int64_t source) {
  if (o.prefill_chunk_size > 0) return o.prefill_chunk_size;
  return source > 0 ? source : kDefaultPrefillChunk;
}

std::string base_name(const std::string& dir) {
  std::filesystem::path p(dir);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

// Query heads per KV head of layer 0 (the IQ4_XS mix promotes attn_v at 4 and more).
int query_groups(const ModelConfig& c) {
  if (c.layers.empty() || c.layers[0].n_kv_heads <= 0) return 1;
  return c.layers[0].n_heads / c.layers[0].n_kv_heads;
}

}  // namespace

ConvertSummary export_hf_to_gguf(const std::string& hf_dir, const std::string& out_path, const ConvertOptions& o) {
  return export_hf_to_gguf(*ModelSource::open(hf_dir), out_path, o);
}

ConvertSummary export_hf_to_gguf(const ModelSource& model, const std::string& out_path, const ConvertOptions& o) {
  const std::string& hf_dir = model.path();
  OG_CHECK(model.hf() != nullptr, hf_dir, ": not a directory (export reads Hugging Face checkpoint directories)");
  OG_CHECK(!model.hf()->config_path.empty(), hf_dir, ": no config.json (not a Hugging Face checkpoint directory)");
  // A source opened without weights (the command reads the tokenizer first) opens them here, once.
  std::shared_ptr<const TensorSource> weights = model.tensors();
  if (!weights) weights = SafetensorsSource::open_dir(hf_dir);
  AtomicOutput out(out_path, o.overwrite);
  HfModelSource m = read_hf_model(*model.hf(), std::move(weights));
  ModelConfig& c = m.config;
  validate_config(c, hf_dir);
  bind_weights(c, *m.weights);  // every tensor present, shaped and typed as the config says
  const std::vector<std::string> notes = as_gguf_runs_it(c);
  const TensorSource& src = *m.weights;
  const std::vector<GgufTensorPlan> plan =
      gguf_tensor_plan(c, [&](const std::string& n) { return src.find(n) != nullptr; });

  int n_attn_v = 0;
  for (const GgufTensorPlan& t : plan) n_attn_v += t.name.find("attn_v.weight") != std::string::npos;
  TensorTypePicker picker(o.type, c.n_layers(), n_attn_v, !c.tied_output, query_groups(c), c.layers[0].n_experts);
  std::vector<Job> jobs;
  bool kept_mxfp4 = false;
  for (const GgufTensorPlan& t : plan) {
    Job j;
    j.name = t.name;
    j.shape = t.shape;
    j.plan = t;
    j.matrix = t.matrix;
    auto source = [&](const std::string& name, const std::vector<int64_t>& shape) {
      const TensorInfo* info = src.find(name);
      OG_CHECK(info != nullptr, hf_dir, ": missing tensor ", name);
      OG_CHECK(info->shape == shape, hf_dir, ": tensor ", name, " has shape ", shape_str(info->shape), ", expected ",
               shape_str(shape));
      // MXFP4: gpt-oss's experts as released (the stacks model/hf_expert_stacks.h makes of them).
      const DType from = static_cast<DType>(info->type_id);
      OG_CHECK(info->known_type && (is_float(from) || from == DType::MXFP4), hf_dir, ": tensor ", name,
               " has type ", info->type_name, " (export reads F32, F16 and BF16 checkpoints, and MXFP4 experts)");
      return info;
    };
    if (!t.source.empty()) j.src = source(t.source, gguf_source_shape(t));
    for (const std::string& name : t.stack_sources)
      j.stack.push_back(source(name, std::vector<int64_t>(t.shape.begin() + 1, t.shape.end())));
    j.to = t.matrix && !gguf_keeps_f32(t.name) ? picker.pick(t.name, t.shape.back()) : DType::F32;
    // MXFP4 experts (gpt-oss as released) stay MXFP4 under a float type, as
    // llama.cpp's converter keeps them: a float copy holds the same values in 2-4x the bytes.
    if (j.src && static_cast<DType>(j.src->type_id) == DType::MXFP4 && is_float(j.to)) j.to = DType::MXFP4;
    kept_mxfp4 = kept_mxfp4 || j.to == DType::MXFP4;
    j.copy = j.src && j.to == static_cast<DType>(j.src->type_id) && t.permute_heads == 0 && t.add == 0 &&
             t.expert_half < 0;
    jobs.push_back(std::move(j));
  }

  GgufWriter w;
  write_gguf_metadata(c, w);
  w.set("general.name", GgufValue::make_string(base_name(hf_dir)));
  // llama.cpp's MOSTLY_MXFP4_MOE (38): MXFP4 experts, the rest in a float type.
  w.set("general.file_type", GgufValue::make_u32(kept_mxfp4 && is_float(o.type.base) ? 38 : o.type.file_type));
  w.set("general.quantization_version", GgufValue::make_u32(2));
  for (const auto& [key, value] : chat_template_gguf_keys({model.chat_template(), model.chat_template_variants()}))
    w.set(key, value);  // the model's templates
  for (const auto& [key, value] : o.metadata) w.set(key, value);
  write_kv_geometry_keys(kv_geometry_from_config(c), chunk_of(o, 0), w);
  ConvertSummary s = write_jobs(w, jobs, o, out,
                                [&](const std::string& p) { verify_written(p, out_path, c); });
  s.fallbacks = picker.fallbacks();
  s.notes = notes;
  return s;
}

ConvertSummary quantize_gguf(const std::string& in_path, const std::string& out_path, const ConvertOptions& o) {
  AtomicOutput out(out_path, o.overwrite);
  GgufModelSource m = read_gguf_model(in_path);
  ModelConfig& c = m.config;
  validate_config(c, in_path);
  bind_weights(c, *m.file);
  const GgufFile& f = *m.file;

  int n_attn_v = 0;
  for (const TensorInfo& t : f.tensors()) n_attn_v += t.name.find("attn_v.weight") != std::string::npos;
  TensorTypePicker picker(o.type, c.n_layers(), n_attn_v, f.find("output.weight") != nullptr, query_groups(c),
                          c.layers[0].n_experts);
  std::vector<Job> jobs;
  for (const TensorInfo& t : f.tensors()) {
    Job j;
    j.name = t.name;
    j.shape = t.shape;
    j.src = &t;
    const bool weight = t.name.size() >= 6 && t.name.compare(t.name.size() - 6, 6, "weight") == 0;
    j.matrix = (t.shape.size() == 2 || t.shape.size() == 3) && weight;  // 3-D: expert stacks
    const DType from = static_cast<DType>(t.type_id);
    j.to = j.matrix && !gguf_keeps_f32(t.name) ? picker.pick(t.name, t.shape.back()) : from;
    j.copy = j.to == from;
    if (!j.copy) {
      OG_CHECK(t.known_type && kernels::weight_dtype_supported(from), in_path, ": tensor ", t.name, " has type ",
               t.type_name, ", which offgraph cannot convert");
      OG_CHECK(is_float(from) || o.allow_requantize, in_path, ": tensor ", t.name, " is already quantized (",
               t.type_name, "); quantize converts F32, F16 and BF16 weights (--allow-requantize converts it anyway, "
               "adding the error of a second quantization)");
    }
    jobs.push_back(std::move(j));
  }

  GgufWriter w;
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  w.set("general.file_type", GgufValue::make_u32(o.type.file_type));
  w.set("general.quantization_version", GgufValue::make_u32(2));
  for (const auto& [key, value] : o.metadata) w.set(key, value);
  if (!read_kv_geometry_keys(f) || o.prefill_chunk_size > 0)
    write_kv_geometry_keys(kv_geometry_from_config(c), chunk_of(o, c.prefill_chunk_size), w);
  ConvertSummary s = write_jobs(w, jobs, o, out,
                                [&](const std::string& p) { verify_written(p, out_path, c); });
  s.fallbacks = picker.fallbacks();
  return s;
}

}  // namespace og
