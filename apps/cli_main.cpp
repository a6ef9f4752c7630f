// og_cli_main: the `offgraph` command line, dispatching to a subcommand. It is
// linked into the `offgraph` program (apps/program/main.c only calls it), not
// into liboffgraph.so, which is the C API alone. Errors from any layer arrive here
// as og::Error and become one line on stderr with exit code 1; bad usage
// (og::UsageError) exits with code 2; no exception leaves this function.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/one_line.h"
#include "commands.h"
#include "base/flags.h"
#include "kernels/ops.h"
#include "og_git_version.h"
#include "offgraph/offgraph.h"

namespace {

void print_help() {
  std::printf("usage: offgraph <command> [options]\n\ncommands:\n");
  for (const auto& c : og::app::commands()) std::printf("  %-11s %s\n", c.name, c.summary);
  std::printf("\n`offgraph <command> --help` (or `offgraph help <command>`) lists that command's options.\n"
              "`offgraph --version` names the build. Exit codes: 0 ok, 1 failure (an unreadable or bad input\n"
              "included), 2 bad usage, 130 interrupted by SIGINT, 143 stopped by SIGTERM.\n");
}

int print_version() {
  std::printf("offgraph %s (commit %s)\n", OG_VERSION_STRING, OG_GIT_COMMIT);
  try {
    std::printf("instruction sets: %s\n", og::kernels::isa_summary().c_str());
  } catch (const og::Error& e) {  // a bad OFFGRAPH_ISA
    std::printf("instruction sets: %s\n", e.what());
  }
  return 0;
}

int cli_main(const std::vector<std::string>& argv_in) {
  // `offgraph help CMD` is `offgraph CMD --help`.
  std::vector<std::string> argv_s = argv_in;
  const size_t argc = argv_s.size();
  if (argc == 3 && argv_s[1] == "help") argv_s = {argv_s[0], argv_s[2], "--help"};
  if (argv_s.size() < 2 || argv_s[1] == "--help" || argv_s[1] == "-h" || argv_s[1] == "help") {
    if (argv_s.size() > 3) {
      std::fprintf(stderr, "offgraph help: expected one command, got %zu arguments\n", argv_s.size() - 2);
      return 2;
    }
    print_help();
    return argv_s.size() < 2 ? 2 : 0;
  }
  if (argv_s[1] == "--version" || argv_s[1] == "-V") return print_version();
  for (const auto& c : og::app::commands()) {
    if (argv_s[1] != c.name) continue;
    og::Args args(argv_s.begin() + 1, argv_s.end());
    try {
      // OFFGRAPH_ISA is read once for every kernel; a bad value is bad usage,
      // reported before any work starts.
      og::kernels::isa_name();
    } catch (const og::Error& e) {
      std::fprintf(stderr, "offgraph %s: error: %s\n", c.name, og::one_line(e.what()).c_str());
      return 2;
    }
    try {
      const int rc = c.run(args);
      // Output that could not be written (a full disk, a closed pipe) is an error, not a silent success.
      if (std::fflush(stdout) != 0 || std::ferror(stdout))
        og::fail("cannot write the output to stdout: ", std::strerror(errno));
      return rc;
    } catch (const og::UsageError& e) {
      std::fprintf(stderr, "offgraph %s: error: %s (see offgraph %s --help)\n", c.name, og::one_line(e.what()).c_str(),
                   c.name);
      return 2;
    } catch (const og::Error& e) {
      std::fprintf(stderr, "offgraph %s: error: %s\n", c.name, og::one_line(e.what()).c_str());
      return 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "offgraph %s: error: out of memory\n", c.name);
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "offgraph %s: internal error: %s\n", c.name, og::one_line(e.what()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "offgraph: unknown command '%s' (see offgraph --help)\n", argv_s[1].c_str());
  return 2;
}

}  // namespace

extern "C" int og_cli_main(int argc, const char* const* argv) {
  try {
    if (argc < 0 || (argc > 0 && argv == nullptr)) {
      std::fprintf(stderr, "offgraph: og_cli_main called with no argument vector\n");
      return 2;
    }
    std::vector<std::string> args;
    for (int i = 0; i < argc; ++i) args.emplace_back(argv[i] ? argv[i] : "");
    if (args.empty()) args.emplace_back("offgraph");
    return cli_main(args);
  } catch (const std::exception& e) {  // nothing crosses the C boundary
    std::fprintf(stderr, "offgraph: internal error: %s\n", e.what());
    return 1;
  }
}
