// offgraph: dispatch to a subcommand. Errors from any layer arrive here as
// og::Error and become one line on stderr with exit code 1; bad usage
// (og::UsageError) exits with code 2.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "base/error.h"
#include "commands.h"
#include "base/flags.h"
#include "kernels/ops.h"

namespace {

void print_help() {
  std::printf("usage: offgraph <command> [options]\n\ncommands:\n");
  for (const auto& c : og::app::commands()) std::printf("  %-11s %s\n", c.name, c.summary);
  std::printf("\n`offgraph <command> --help` lists that command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("offgraph 0.1.0\n");
    return 0;
  }
  for (const auto& c : og::app::commands()) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    og::Args args(argv + 1, argv + argc);
    try {
      // OFFGRAPH_ISA is read once for every kernel; a bad value is bad usage,
      // reported before any work starts.
      og::kernels::isa_name();
    } catch (const og::Error& e) {
      std::fprintf(stderr, "offgraph %s: error: %s\n", c.name, e.what());
      return 2;
    }
    try {
      const int rc = c.run(args);
      // Output that could not be written (a full disk, a closed pipe) is an error, not a silent success.
      if (std::fflush(stdout) != 0 || std::ferror(stdout))
        og::fail("cannot write the output to stdout: ", std::strerror(errno));
      return rc;
    } catch (const og::UsageError& e) {
      std::fprintf(stderr, "offgraph %s: error: %s (see offgraph %s --help)\n", c.name, e.what(), c.name);
      return 2;
    } catch (const og::Error& e) {
      std::fprintf(stderr, "offgraph %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "offgraph %s: error: out of memory\n", c.name);
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "offgraph %s: internal error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "offgraph: unknown command '%s' (see offgraph --help)\n", argv[1]);
  return 2;
}
