// AtomicOutput: temporary file + rename, and the signal handler that removes
// the temporary file of an interrupted write (see atomic_file.h).
#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace og {
namespace {

// The temporary path being written, for the signal handler (one output at a time).
char g_temp[4096];
volatile sig_atomic_t g_have_temp = 0;

extern "C" void remove_temp_and_die(int sig) {
  if (g_have_temp) unlink(g_temp);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Only where nobody handles the signal: a program that catches it itself stops
// at a safe point and lets ~AtomicOutput remove the temporary file.
void install_handlers() {
  static bool done = false;
  if (done) return;
  done = true;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_temp_and_die;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

AtomicOutput::AtomicOutput(const std::string& final_path, bool overwrite) : final_(final_path) {
  namespace fs = std::filesystem;
  OG_CHECK(!final_path.empty(), "the output path is empty");
  std::error_code ec;
  const fs::path p(final_path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  OG_CHECK(fs::is_directory(dir, ec), final_path, ": the directory ", dir.string(), " does not exist");
  struct stat st {};
  if (stat(final_path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      OG_CHECK(!S_ISDIR(st.st_mode), final_path, ": is a directory");
      in_place_ = true;  // a device: written directly
      write_path_ = final_path;
      return;
    }
    OG_CHECK(overwrite, final_path, ": already exists (pass --force to overwrite it)");
  }
  write_path_ = cat(final_path, ".tmp-", getpid());
  OG_CHECK(write_path_.size() < sizeof(g_temp), final_path, ": the path is too long");
  std::memcpy(g_temp, write_path_.c_str(), write_path_.size() + 1);
  install_handlers();
  g_have_temp = 1;
}

AtomicOutput::~AtomicOutput() {
  if (in_place_ || committed_) return;
  g_have_temp = 0;
  unlink(write_path_.c_str());
}

void AtomicOutput::commit() {
  if (in_place_) return;
  const int fd = open(write_path_.c_str(), O_RDONLY);
  OG_CHECK(fd >= 0, write_path_, ": cannot reopen to sync: ", std::strerror(errno));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  OG_CHECK(rc == 0, final_, ": write failed: ", std::strerror(err));
  OG_CHECK(std::rename(write_path_.c_str(), final_.c_str()) == 0, final_, ": cannot rename ", write_path_,
           " onto it: ", std::strerror(errno));
  g_have_temp = 0;
  committed_ = true;
}

}  // namespace og
