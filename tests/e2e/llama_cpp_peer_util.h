// What the llama.cpp peer tests share: where llama.cpp's programs are (built
// outside the repository: $OFFGRAPH_LLAMA_CPP_BIN, else the directory CMake
// was given, OG_LLAMA_CPP_BIN); e2e_util.h's run_program runs them.
#pragma once

#include <cstdlib>
#include <string>

#include "e2e_util.h"  // run_program

#ifndef OG_LLAMA_CPP_BIN
#define OG_LLAMA_CPP_BIN ""
#endif

namespace og::e2e {

inline std::string llama_bin() {
  if (const char* e = std::getenv("OFFGRAPH_LLAMA_CPP_BIN"); e && *e) return e;
  return OG_LLAMA_CPP_BIN;
}

}  // namespace og::e2e
