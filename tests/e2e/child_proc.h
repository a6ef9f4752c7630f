// A child offgraph driven as a person or a shell would: stdin a pipe, stdout a
// pipe or a pseudo-terminal, stderr a file; every wait has a deadline and a
// child past it is killed, so no test can hang.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace og::e2e {

// A running offgraph: stdin a pipe we write, stdout a pipe (or a pty) we read,
// stderr a file.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1;
  std::string err_path, out_text;

  // Reads stdout until it holds `n` bytes or `seconds` pass; false on timeout or EOF.
  bool read_at_least(size_t n, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (out_text.size() < n) {
      if (std::chrono::steady_clock::now() > end) return false;
      if (!read_some(50)) return false;
    }
    return true;
  }
  // One poll + read; false at EOF.
  bool read_some(int ms) {
    pollfd p{out, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return true;
    char buf[4096];
    const ssize_t r = ::read(out, buf, sizeof buf);
    if (r <= 0) return false;  // EOF (a pty answers EIO when the other side closed)
    out_text.append(buf, static_cast<size_t>(r));
    return true;
  }
  std::string err() const { return slurp(err_path); }
  // Waits until stderr contains `s` (false after `seconds`).
  bool wait_err(const std::string& s, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (err().find(s) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end) return false;
      read_some(20);
    }
    return true;
  }
  // Reads stdout to EOF and reaps the child; kills it after `seconds`. Returns the exit code.
  int finish(double seconds) {
    if (in >= 0) ::close(in), in = -1;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (read_some(50)) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(pid, SIGKILL);
        break;
      }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

// ignore_sigint: the child starts with SIGINT ignored, as a shell starts a
// background job.
inline Child spawn(const std::vector<std::string>& args, bool stdout_pty = false, bool ignore_sigint = false) {
  static int counter = 0;
  Child c;
  c.err_path = scratch_dir() + "/interactive" + std::to_string(counter++) + ".err";
  int in_pipe[2], out_pipe[2];
  EXPECT_EQ(::pipe(in_pipe), 0);
  int out_slave = -1;
  if (stdout_pty) {
    EXPECT_EQ(::openpty(&c.out, &out_slave, nullptr, nullptr, nullptr), 0);
  } else {
    EXPECT_EQ(::pipe(out_pipe), 0);
    c.out = out_pipe[0];
    out_slave = out_pipe[1];
  }
  const std::string exe = std::string(OG_BINARY_DIR) + "/offgraph";
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  c.pid = ::fork();
  if (c.pid == 0) {
    const int fe = ::open(c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_slave, 1);
    ::dup2(fe, 2);
    ::close(in_pipe[1]);
    ::close(c.out);
    if (ignore_sigint) ::signal(SIGINT, SIG_IGN);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_slave);
  c.in = in_pipe[1];
  return c;
}

inline void write_all(int fd, const std::string& s) { ASSERT_EQ(::write(fd, s.data(), s.size()), ssize_t(s.size())); }

}  // namespace og::e2e
