// The subcommand registry: one line per command.
#include "commands.h"

namespace og::app {

int cmd_run(const Args& args);   // cmd_run.cpp
int cmd_chat(const Args& args);  // cmd_chat.cpp

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"run", "generate from one prompt (streams to stdout)", cmd_run},
      {"chat", "multi-turn chat on stdin (/help lists the commands)", cmd_chat},
  };
  return kCommands;
}

}  // namespace og::app
