// Runs the built offgraph binary (OG_BINARY_DIR/offgraph) with arguments and
// optional stdin text, capturing stdout, stderr and the exit code.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace og::e2e {

struct Proc {
  int code = -1;
  std::string out, err;
  int64_t max_rss_kb = 0;  // the child's peak resident set (getrusage ru_maxrss)
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string scratch_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("og_e2e_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

// Runs argv (argv[0] a path, or a name looked up on PATH) with `env`
// ("NAME=value") added, stdin from `in`, stdout to `out`, stderr to `err`; its
// exit code (128 + signal if killed, 125 if a file could not be opened). `ru`,
// when given, receives the child's resource use (peak resident set).
inline int run_program(const std::vector<std::string>& argv_s, const std::string& out,
                       const std::string& err = "/dev/null", const std::vector<std::string>& env = {},
                       const std::string& in = "/dev/null", struct rusage* ru = nullptr) {
  std::vector<std::string> args = argv_s, vars = env;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    for (std::string& kv : vars) putenv(kv.data());
    const int fi = open(in.c_str(), O_RDONLY);
    const int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || fi < 0) _exit(125);
    dup2(fi, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage own {};
  wait4(pid, &status, 0, ru ? ru : &own);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs `offgraph args...` with stdin from `input`; stdout goes to `stdout_to`
// when given (e.g. /dev/full), else it is captured.
// stdin_from: a path opened as stdin instead of `input` (e.g. a directory).
inline Proc offgraph(const std::vector<std::string>& args, const std::string& input = "",
                     const std::string& stdout_to = "", const std::string& stdin_from = "") {
  static int counter = 0;
  const std::string base = scratch_dir() + "/p" + std::to_string(counter++);
  const std::string in_path = base + ".in", out_path = base + ".out", err_path = base + ".err";
  {
    std::ofstream in(in_path, std::ios::binary);
    in << input;
  }
  std::vector<std::string> argv_s = {std::string(OG_BINARY_DIR) + "/offgraph"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  Proc p;
  struct rusage ru {};
  p.code = run_program(argv_s, stdout_to.empty() ? out_path : stdout_to, err_path, {},
                       stdin_from.empty() ? in_path : stdin_from, &ru);
  p.max_rss_kb = ru.ru_maxrss;
  p.out = slurp(out_path);
  p.err = slurp(err_path);
  std::filesystem::remove(in_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return p;
}

inline std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  std::string l;
  while (std::getline(is, l)) v.push_back(l);
  return v;
}

inline size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// stdout of a run with --stats json: the generated text, then the report as
// its last line (after a newline added when the text did not end with one).
struct TextAndReport {
  std::string text;    // the text without that separating newline
  std::string report;  // the JSON line
};
inline TextAndReport split_report(const std::string& out) {
  std::string body = out;
  if (!body.empty() && body.back() == '\n') body.pop_back();
  const size_t nl = body.rfind('\n');
  if (nl == std::string::npos) return {"", body};
  return {body.substr(0, nl), body.substr(nl + 1)};
}

}  // namespace og::e2e
