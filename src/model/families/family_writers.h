// GGUF writers shared between family specs (Mistral is written as GGUF "llama").
#pragma once

#include "model/config.h"

namespace og {

class GgufWriter;

void llama_to_gguf(const ModelConfig& c, GgufWriter& w);  // families/llama.cpp

}  // namespace og
