// What the llama.cpp peer tests share: where llama.cpp's programs are (built
// outside the repository: $OFFGRAPH_LLAMA_CPP_BIN, else the directory CMake
// was given, OG_LLAMA_CPP_BIN) and running one of them with its output in files.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#ifndef OG_LLAMA_CPP_BIN
#define OG_LLAMA_CPP_BIN ""
#endif

namespace og::e2e {

inline std::string llama_bin() {
  if (const char* e = std::getenv("OFFGRAPH_LLAMA_CPP_BIN"); e && *e) return e;
  return OG_LLAMA_CPP_BIN;
}

// Runs argv with `env` ("NAME=value") added, stdout to `out`, stderr to `err`
// (default /dev/null), stdin /dev/null; its exit code (128 + signal if killed).
inline int run_program(const std::vector<std::string>& argv_s, const std::string& out,
                       const std::string& err = "/dev/null", const std::vector<std::string>& env = {}) {
  std::vector<std::string> args = argv_s, vars = env;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    for (std::string& kv : vars) putenv(kv.data());
    const int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0) _exit(125);
    dup2(fi, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace og::e2e
