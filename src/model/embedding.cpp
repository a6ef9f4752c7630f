// Pooling, dense projections and normalisation of embeddings (embedding.h).
// The fast forms sum in float row by row with the kernels; the plain twins
// accumulate in double with loops.
#include "model/embedding.h"

#include <cmath>

#include "base/error.h"
#include "kernels/ops.h"

namespace og {
namespace {

// [begin, end) row ranges of each sequence, in order of appearance.
struct SeqRange {
  int seq;
  int64_t begin, end;
};

std::vector<SeqRange> sequence_ranges(std::span<const BatchRow> rows) {
  std::vector<SeqRange> out;
  for (int64_t i = 0; i < static_cast<int64_t>(rows.size()); ++i) {
    if (!out.empty() && out.back().seq == rows[i].seq) {
      out.back().end = i + 1;
      continue;
    }
    for (const SeqRange& r : out)
      OG_CHECK(r.seq != rows[i].seq, "embeddings: the rows of sequence ", rows[i].seq, " are not consecutive");
    out.push_back({rows[i].seq, i, i + 1});
  }
  return out;
}

void check_pooling(Pooling p) {
  OG_CHECK(p != Pooling::kUnset, "embeddings: the model declares no pooling (it is not an embedding model)");
}

}  // namespace

void pool_rows(Pooling p, std::span<const BatchRow> rows, const float* hidden, int64_t d, Embeddings& out) {
  check_pooling(p);
  out.dim = d;
  out.seqs.clear();
  if (p == Pooling::kNone) {
    for (const BatchRow& r : rows) out.seqs.push_back(r.seq);
    out.values.assign(hidden, hidden + static_cast<int64_t>(rows.size()) * d);
    return;
  }
  const std::vector<SeqRange> ranges = sequence_ranges(rows);
  out.values.assign(ranges.size() * static_cast<size_t>(d), 0.0f);
  for (size_t k = 0; k < ranges.size(); ++k) {
    const SeqRange& r = ranges[k];
    float* y = out.values.data() + k * d;
    out.seqs.push_back(r.seq);
    switch (p) {
      case Pooling::kMean:
        for (int64_t i = r.begin; i < r.end; ++i) kernels::add(y, hidden + i * d, d);
        kernels::scale(y, 1.0f / static_cast<float>(r.end - r.begin), d);
        break;
      case Pooling::kCls: std::copy(hidden + r.begin * d, hidden + (r.begin + 1) * d, y); break;
      case Pooling::kLast: std::copy(hidden + (r.end - 1) * d, hidden + r.end * d, y); break;
      default: break;
    }
  }
}

void pool_rows_ref(Pooling p, std::span<const BatchRow> rows, const float* hidden, int64_t d, Embeddings& out) {
  check_pooling(p);
  out = Embeddings{};
  out.dim = d;
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int> order;
  for (int64_t i = 0; i < n; ++i) {
    bool known = false;
    for (int s : order) known = known || s == rows[i].seq;
    if (!known || p == Pooling::kNone) order.push_back(rows[i].seq);
  }
  if (p == Pooling::kNone) {
    out.seqs = order;
    out.values.assign(hidden, hidden + n * d);
    return;
  }
  for (int seq : order) {
    std::vector<double> acc(static_cast<size_t>(d), 0.0);
    int64_t count = 0, first = -1, last = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (rows[i].seq != seq) continue;
      if (first < 0) first = i;
      last = i;
      ++count;
      for (int64_t e = 0; e < d; ++e) acc[e] += hidden[i * d + e];
    }
    out.seqs.push_back(seq);
    for (int64_t e = 0; e < d; ++e) {
      double v = 0;
      if (p == Pooling::kMean) v = acc[e] / static_cast<double>(count);
      if (p == Pooling::kCls) v = hidden[first * d + e];
      if (p == Pooling::kLast) v = hidden[last * d + e];
      out.values.push_back(static_cast<float>(v));
    }
  }
}

void apply_dense(std::span<const TensorView> dense, Embeddings& out) {
  const int64_t n = static_cast<int64_t>(out.seqs.size());
  for (const TensorView& w : dense) {
    OG_CHECK(w.shape.size() == 2 && w.shape[1] == out.dim, "embeddings: dense projection ", w.name, " expects ",
             w.shape.size() == 2 ? w.shape[1] : 0, " inputs, got ", out.dim);
    std::vector<float> y(static_cast<size_t>(n * w.shape[0]));
    if (n > 0) kernels::matmul(w, out.values.data(), n, y.data());
    out.values = std::move(y);
    out.dim = w.shape[0];
  }
}

void normalize_embedding(float* x, int64_t n, int mode) {
  OG_CHECK(mode >= -1, "embedding normalisation ", mode, " is not one of -1 (none), 0 (max-abs), 1 (taxicab), "
           "2 (euclidean), p > 2 (p-norm)");
  double sum = 0;
  switch (mode) {
    case -1: return;
    case 0:
      for (int64_t i = 0; i < n; ++i) sum = std::max(sum, static_cast<double>(std::fabs(x[i])));
      sum /= 32760.0;  // llama.cpp: an int16 range
      break;
    case 2:
      for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
      sum = std::sqrt(sum);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) sum += std::pow(std::fabs(static_cast<double>(x[i])), mode);
      sum = std::pow(sum, 1.0 / mode);
      break;
  }
  const float k = sum > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
  kernels::scale(x, k, n);
}

void normalize_embedding_ref(float* x, int64_t n, int mode) {
  OG_CHECK(mode >= -1, "embedding normalisation ", mode, " is not supported");
  if (mode == -1) return;
  double norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(static_cast<double>(x[i]));
    if (mode == 0) norm = std::max(norm, a / 32760.0);
    else norm += std::pow(a, mode);
  }
  if (mode > 0) norm = std::pow(norm, 1.0 / mode);
  for (int64_t i = 0; i < n; ++i) x[i] = norm > 0 ? static_cast<float>(x[i] / norm) : 0.0f;
}

void truncate_embeddings(Embeddings& out, int64_t dims) {
  OG_CHECK(dims > 0 && dims <= out.dim, "dimensions ", dims, " must be between 1 and the model's embedding width ",
           out.dim);
  if (dims == out.dim) return;
  const int64_t n = static_cast<int64_t>(out.seqs.size());
  std::vector<float> v(static_cast<size_t>(n * dims));
  for (int64_t i = 0; i < n; ++i)
    std::copy(out.values.begin() + i * out.dim, out.values.begin() + i * out.dim + dims, v.begin() + i * dims);
  out.values = std::move(v);
  out.dim = dims;
}

}  // namespace og
