// Sentence embeddings from a model's output-normed hidden rows: pooling per
// sequence (mean / cls / last / none, as the file's pooling type says), the
// dense projections that follow it, and llama.cpp's normalisations
// (--embd-normalize: -1 none, 0 max-abs scaled to int16 range, 1 taxicab,
// 2 euclidean, p > 2 p-norm). Each has a plain twin the tests hold it to.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/model.h"
#include "tensor/tensor_view.h"

namespace og {

// Pools hidden [rows.size(), d] by sequence: one vector per sequence, in the
// order sequences first appear (seqs), or one per row for Pooling::kNone.
// Rows of a sequence must be consecutive (positions in order). og::Error for kUnset.
void pool_rows(Pooling p, std::span<const BatchRow> rows, const float* hidden, int64_t d, Embeddings& out);
void pool_rows_ref(Pooling p, std::span<const BatchRow> rows, const float* hidden, int64_t d, Embeddings& out);

// out.values [n, d_in] -> [n, d_out] through each projection W [d_out, d_in] in turn.
void apply_dense(std::span<const TensorView> dense, Embeddings& out);

// llama.cpp's common_embd_normalize of n values in place; og::Error for mode < -1.
void normalize_embedding(float* x, int64_t n, int mode);
void normalize_embedding_ref(float* x, int64_t n, int mode);

// Matryoshka truncation: keeps the first `dims` values of each vector (then the
// caller normalises again). og::Error unless 0 < dims <= out.dim.
void truncate_embeddings(Embeddings& out, int64_t dims);

}  // namespace og
