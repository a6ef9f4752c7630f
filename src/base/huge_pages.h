// Anonymous memory for data streamed once per token (model weights, large
// K/V buffers): 2 MiB aligned, its whole 2 MiB pages madvise(MADV_HUGEPAGE)d,
// so transparent huge pages back them where the kernel allows (fewer TLB
// misses; measured +15-45 % decode on this machine kind); a partial last page
// stays in ordinary pages. Plus a way to drop a file mapping's pages after copying them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace og {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // Throws og::Error when `bytes` of memory cannot be mapped. 0 bytes: empty.
  explicit HugePageBuffer(size_t bytes);
  // The same, but empty (data() null) instead of throwing when the mapping fails.
  HugePageBuffer(size_t bytes, std::nothrow_t);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& o) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& o) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset();
  void* map_ = nullptr;  // the whole mapping (data_ is its 2 MiB aligned start)
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Drops the pages lying wholly inside [p, p + n) from this process
// (madvise(MADV_DONTNEED)). ONLY for read-only file mappings: their pages
// fault back in from the file if touched again. On anonymous memory this
// would zero the data.
void release_file_pages(const void* p, size_t n);

}  // namespace og
