// KvBuffer: huge pages for large K/V buffers, the heap for small ones.
#include "kv/kv_buffer.h"

#include <cstring>
#include <new>
#include <utility>

namespace og::kv {

void KvBuffer::assign(size_t n, Pages pages) {
  pages_ = pages;
  huge_ = HugePageBuffer();
  small_.reset();
  data_ = nullptr;
  n_ = 0;
  if (n == 0) return;
  if (pages == Pages::kHugeWhenLarge && n >= kKvHugePageMin) {
    HugePageBuffer h(n, std::nothrow);
    if (h.data() == nullptr) throw std::bad_alloc();
    huge_ = std::move(h);
    data_ = huge_.data();
  } else {
    small_.reset(new uint8_t[n]);
    data_ = small_.get();
  }
  n_ = n;
}

KvBuffer& KvBuffer::operator=(KvBuffer&& o) noexcept {
  if (this != &o) {
    huge_ = std::move(o.huge_);
    small_ = std::move(o.small_);
    data_ = std::exchange(o.data_, nullptr);
    n_ = std::exchange(o.n_, 0);
    pages_ = o.pages_;
  }
  return *this;
}

KvBuffer& KvBuffer::operator=(const KvBuffer& o) {
  if (this != &o) {
    assign(o.n_, o.pages_);
    if (n_) std::memcpy(data_, o.data_, n_);
  }
  return *this;
}

}  // namespace og::kv
