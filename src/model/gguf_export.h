// Writing a ModelConfig back as GGUF, the inverse of Model::load: the metadata
// (through the family spec's to_gguf), the tensor plan (GGUF names, where each
// tensor comes from, and the fixes that undo load-time conventions: the llama
// q/k row permutation, HF gemma's 1 + w norms, llama3 RoPE factors as
// rope_freqs.weight), and the check that a written file reads back as the
// config it was written from.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "model/config.h"
#include "model/weights.h"

namespace og {

struct GgufTensorPlan {
  std::string name;            // GGUF tensor name
  std::string source;          // the tensor's name in the config's layout; "" = generated (values in `generated`)
  std::vector<int64_t> shape;  // row-major, outermost first ([out, in] for matrices)
  bool matrix = false;         // a 2-D weight or 3-D expert stack (may be quantized); 1-D tensors are written as F32
  TensorRole role = TensorRole::kTokenEmbd;  // unused when generated
  int layer = -1;              // -1: not a layer tensor
  // > 0: rows are reordered from rotate-half to interleaved pairs, per head of
  // permute_head_dim rows (the llama converter's q/k permutation).
  int64_t permute_heads = 0;
  int64_t permute_head_dim = 0;
  float add = 0;                 // added to every value (HF gemma norms hold w of a 1 + w norm)
  std::vector<float> generated;  // rope_freqs.weight: the per-pair RoPE frequency factors
  // Non-empty: the tensor is these source tensors (each of shape[1:]) stacked
  // along its first dim, in order (HF per-expert matrices -> one GGUF
  // [n_experts, rows, cols] tensor); `source` is then "".
  std::vector<std::string> stack_sources;
  // 0 / 1: `source` is HF's fused experts gate_up_proj [n_experts, 2 rows,
  // cols] and this tensor [n_experts, rows, cols] is each expert's first
  // (gate) / second (up) half of its rows; -1: not such a slice.
  int expert_half = -1;
};

// The source row of row r of planned tensor t (the llama q/k permutation's
// inverse, or the fused experts' half), else r.
int64_t gguf_source_row(const GgufTensorPlan& t, int64_t r);
// The shape the source of t has (t.shape but for a fused experts half: twice the rows).
std::vector<int64_t> gguf_source_shape(const GgufTensorPlan& t);

// Every tensor of a GGUF file of c, in the order llama.cpp's converter writes
// them. source_has(name): whether the source holds an optional tensor (the
// output bias); nullptr = it holds none. og::Error when c cannot be written
// (no GGUF form for the family, per-layer RoPE factors, partial rotation with
// a permutation).
std::vector<GgufTensorPlan> gguf_tensor_plan(const ModelConfig& c,
                                             const std::function<bool(const std::string&)>& source_has = nullptr);

// Matrices written F32 whatever the weight type: the expert routers
// (blk.N.ffn_gate_inp.weight), small and deciding which experts run, which
// llama.cpp's quantizer never quantizes either; an encoder's token-type table
// (token_types.weight), whose row llama.cpp adds as it is (its CPU add takes
// no quantized operand).
bool gguf_keeps_f32(const std::string& gguf_name);

// Turns the source values of a planned tensor (row-major f32) into its GGUF values.
void apply_gguf_fixes(const GgufTensorPlan& t, std::vector<float>& values);

// The llama converter's q/k permutation: rows [n_heads * head_dim] of `cols`
// values, rotate-half order -> interleaved pairs (GGUF row h·hd + 2i + j =
// HF row h·hd + j·hd/2 + i).
std::vector<float> permute_rows_to_interleaved(const std::vector<float>& x, int64_t n_heads, int64_t head_dim,
                                               int64_t cols);

// general.architecture and the <arch>.* keys of c (the family spec's to_gguf).
void write_gguf_metadata(const ModelConfig& c, GgufWriter& w);

// Changes c into what its GGUF file will run where the format cannot say
// what c holds, returning one note per change for the export's summary:
// yarn with transformers' truncate = false (gpt-oss) becomes truncated.
std::vector<std::string> as_gguf_runs_it(ModelConfig& c);

// og::Error naming the first field in which `written` (c's file read back)
// differs from `c`, with both values. Fields that differ by the formats'
// conventions (layout, q/k row order, norm offset, gemma's embedding scale
// rounding) are not compared.
void check_same_config(const ModelConfig& c, const ModelConfig& written, const std::string& file);

}  // namespace og
