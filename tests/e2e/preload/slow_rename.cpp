// A hung disk for the end-to-end tests, loaded with LD_PRELOAD into the
// offgraph binary: rename() of a prefix-cache block file (name ending in
// ".kvb") first sleeps $OG_TEST_RENAME_SLEEP_S seconds, as a write to a hung
// network file system would; every other rename is the C library's.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" int rename(const char* from, const char* to) {
  using Rename = int (*)(const char*, const char*);
  static const Rename real = reinterpret_cast<Rename>(dlsym(RTLD_NEXT, "rename"));
  const size_t n = to ? std::strlen(to) : 0;
  if (n > 4 && std::strcmp(to + n - 4, ".kvb") == 0)
    if (const char* s = std::getenv("OG_TEST_RENAME_SLEEP_S")) sleep(static_cast<unsigned>(std::atoi(s)));
  return real(from, to);
}
