// The subcommands of `offgraph`. Each takes its own arguments (argv[0] is the
// subcommand name) and returns the process exit code: 0 ok, 1 runtime failure,
// 2 bad usage (flag, value, combination).
#pragma once

#include "base/flags.h"

namespace og::app {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);
};

// The registry, in the order `offgraph --help` lists them (commands.cpp).
const std::vector<Command>& commands();

}  // namespace og::app
