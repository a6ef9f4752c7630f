// KvBuffer: the storage behind the K/V rows of the storing cache kinds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "base/huge_pages.h"

namespace og::kv {

// Buffers of at least one huge page live in 2 MiB-aligned MADV_HUGEPAGE
// memory (base/huge_pages.h: whole 2 MiB pages only, the tail in base
// pages, 4, 16 or 64 KiB by kernel): a decode step streams a deep history
// once per token, and with 4 KiB pages that costs a page walk every 32 rows
// of 128 bytes. 1B Q4_K_M at depth 4096, 2 threads (Intel Xeon,
// alternately, four pairs): 77 -> 90 % of the bandwidth bound. Smaller
// buffers (tests, short prompts) stay on the heap.
constexpr size_t kKvHugePageMin = size_t{2} << 20;

// Uninitialised bytes (only written rows are ever read; pages are committed
// when first written, a huge page whole: a buffer whose head regions are all
// partly written, as a flat cache after doubling, can commit all of itself).
// Guaranteed: assign() either gives `n` usable bytes or throws
// std::bad_alloc, leaving the buffer empty; a copy is a deep copy of all n
// bytes.
class KvBuffer {
 public:
  // kHugeWhenLarge: huge pages from kKvHugePageMin bytes; kOrdinary: never
  // (the batched-cell pool: measured slower in huge pages, see cell_cache.cpp).
  enum class Pages { kHugeWhenLarge, kOrdinary };

  KvBuffer() = default;
  explicit KvBuffer(size_t n, Pages pages = Pages::kHugeWhenLarge) { assign(n, pages); }
  KvBuffer(const KvBuffer& o) { *this = o; }
  KvBuffer& operator=(const KvBuffer& o);
  KvBuffer(KvBuffer&& o) noexcept { *this = std::move(o); }
  KvBuffer& operator=(KvBuffer&& o) noexcept;  // leaves o empty

  // Replaces the contents with n uninitialised bytes. A copy keeps the source's Pages.
  void assign(size_t n, Pages pages = Pages::kHugeWhenLarge);
  uint8_t* data() const { return data_; }
  size_t size() const { return n_; }
  bool huge() const { return huge_.data() != nullptr; }

 private:
  HugePageBuffer huge_;
  std::unique_ptr<uint8_t[]> small_;
  uint8_t* data_ = nullptr;
  size_t n_ = 0;
  Pages pages_ = Pages::kHugeWhenLarge;
};

}  // namespace og::kv
