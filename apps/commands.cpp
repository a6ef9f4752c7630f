// The subcommand registry: one line per command.
#include "commands.h"

namespace og::app {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
  };
  return kCommands;
}

}  // namespace og::app
