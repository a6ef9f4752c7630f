// HugePageBuffer (2 MiB aligned anonymous mapping with MADV_HUGEPAGE) and
// release_file_pages.
#include "base/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.h"

namespace og {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
}  // namespace

HugePageBuffer::HugePageBuffer(size_t bytes) : HugePageBuffer(bytes, std::nothrow) {
  if (bytes != 0 && data_ == nullptr) fail("cannot allocate ", bytes, " bytes for model weights: ", std::strerror(errno));
}

HugePageBuffer::HugePageBuffer(size_t bytes, std::nothrow_t) {
  if (bytes == 0) return;
  map_bytes_ = bytes + kHuge;  // room to align the start to 2 MiB
  if (map_bytes_ < bytes) {  // size_t overflow: no such mapping can exist
    map_bytes_ = 0;
    errno = ENOMEM;
    return;
  }
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    map_bytes_ = 0;
    return;
  }
  map_ = p;
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) / kHuge * kHuge;
  data_ = reinterpret_cast<uint8_t*>(a);
  size_ = bytes;
  // Best effort: without THP the memory is ordinary pages, which still works.
  // Only whole 2 MiB pages are advised: a partial last page stays in base
  // pages (4, 16 or 64 KiB), so nothing past `bytes` is ever committed.
  // MADV_HUGEPAGE is Linux's; elsewhere (macOS) the mapping is plain pages.
#ifdef MADV_HUGEPAGE
  if (const size_t whole = bytes / kHuge * kHuge; whole > 0) madvise(data_, whole, MADV_HUGEPAGE);
#endif
}

HugePageBuffer::~HugePageBuffer() { reset(); }

void HugePageBuffer::reset() {
  if (map_) munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  data_ = nullptr;
  size_ = 0;
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& o) noexcept { *this = std::move(o); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    std::swap(map_, o.map_);
    std::swap(map_bytes_, o.map_bytes_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }
  return *this;
}

void release_file_pages(const void* p, size_t n) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(p), e = b + n;
  const uintptr_t lo = (b + page - 1) / page * page, hi = e / page * page;
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

}  // namespace og
