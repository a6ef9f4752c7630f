// Runs `offgraph serve` as a child process on 127.0.0.1 (a free port chosen
// by the server, read from its ready line), and stops it with a signal,
// reaping it within a bound. Also runs other commands (curl, node) and
// captures their output.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "e2e_util.h"

namespace og::e2e {

class ServeProc {
 public:
  // Starts `offgraph serve args... --host 127.0.0.1 --port 0` and waits (up to
  // 120 s) for its ready line. ready() is false when it exited first.
  explicit ServeProc(std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    for (const char* a : {"--host", "127.0.0.1", "--port", "0"}) args.push_back(a);
    err_path_ = scratch_dir() + "/serve" + std::to_string(counter()++) + ".err";
    int out[2];
    if (pipe(out) != 0) return;
    const std::string exe = std::string(OG_BINARY_DIR) + "/offgraph";
    std::vector<std::string> argv_s = {exe};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      const int fe = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out[1], 1);
      dup2(fe, 2);
      close(out[0]);
      execv(exe.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    out_fd_ = out[0];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    const std::regex ready_re("ready on http://127\\.0\\.0\\.1:(\\d+)");
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(out_fd_, buf, sizeof buf);
      if (n <= 0) break;  // exited before it was ready
      stdout_.append(buf, static_cast<size_t>(n));
      std::smatch m;
      if (std::regex_search(stdout_, m, ready_re)) {
        port_ = std::stoi(m[1]);
        return;
      }
    }
  }
  ~ServeProc() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
  }
  ServeProc(const ServeProc&) = delete;
  ServeProc& operator=(const ServeProc&) = delete;

  bool ready() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& ready_output() const { return stdout_; }
  std::string stderr_text() const { return slurp(err_path_); }

  // Sends `sig` without waiting (a shutdown then runs while the test talks to the server).
  void signal(int sig) {
    if (pid_ > 0 && !reaped_) kill(pid_, sig);
  }

  // Sends `sig` and waits up to `seconds` for the exit; the exit code, or -1
  // when it did not exit in time (then it is killed).
  int stop(int sig = SIGTERM, double seconds = 60) {
    if (pid_ <= 0 || reaped_) return -1;
    kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  bool reaped_ = false;
  std::string stdout_, err_path_;
};

// Runs argv (argv[0] looked up on PATH), capturing stdout and stderr.
inline Proc run_tool(const std::vector<std::string>& argv_s) {
  static int counter = 0;
  const std::string base = scratch_dir() + "/tool" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  Proc p;
  p.code = run_program(argv_s, out_path, err_path);
  p.out = slurp(out_path);
  p.err = slurp(err_path);
  return p;
}

}  // namespace og::e2e
