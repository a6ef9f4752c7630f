// tensor_view(): the one place a listed tensor becomes usable data, and where a
// type offgraph cannot compute with becomes an error naming the tensor.
#include "format/tensor_source.h"

#include "base/error.h"

namespace og {

TensorView tensor_view(const TensorSource& src, const TensorInfo& t) {
  if (!t.known_type)
    fail(src.source_name(), ": tensor ", t.name, " has type ", t.type_name, ", which offgraph cannot compute with");
  TensorView v;
  v.data = t.data;
  v.dtype = static_cast<DType>(t.type_id);
  v.shape = t.shape;
  v.name = t.name;
  return v;
}

}  // namespace og
