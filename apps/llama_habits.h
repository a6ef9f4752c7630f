// llama.cpp's flags, as people who come from it type them: its spellings of
// flags we have are aliases (registered by the shared flag table), and its
// flags we do not have are answered with what offgraph does instead, rather
// than a suggestion of a similar-looking flag of ours (--lora is not --port).
#pragma once

#include <string>

#include "base/flags.h"

namespace og::app {

// Registers every llama.cpp flag offgraph does not have as a foreign flag of
// `fl` (spellings the command registers itself are not affected). `command`
// tailors the answers where a flag means something in another command.
void add_llama_cpp_habits(Flags& fl, const std::string& command);

}  // namespace og::app
