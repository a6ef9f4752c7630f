// The subcommand registry: one line per command.
#include "commands.h"

namespace og::app {

int cmd_run(const Args& args);   // cmd_run.cpp
int cmd_chat(const Args& args);  // cmd_chat.cpp
int cmd_batch(const Args& args);  // cmd_batch.cpp

int cmd_tokenize(const Args& args);    // cmd_tokenize.cpp
int cmd_detokenize(const Args& args);  // cmd_tokenize.cpp

int cmd_inspect(const Args& args);  // cmd_inspect.cpp
int cmd_bench(const Args& args);    // cmd_bench.cpp

int cmd_export(const Args& args);    // cmd_export.cpp
int cmd_quantize(const Args& args);  // cmd_quantize.cpp

int cmd_serve(const Args& args);  // cmd_serve.cpp
int cmd_embed(const Args& args);  // cmd_embed.cpp

int cmd_template(const Args& args);  // cmd_template.cpp

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"inspect", "what a model file holds: architecture, shapes, tensors, tokenizer, KV geometry", cmd_inspect},
      {"run", "generate from one prompt (streams to stdout)", cmd_run},
      {"chat", "multi-turn chat on stdin (/help lists the commands)", cmd_chat},
      {"embed", "sentence embeddings of texts with an embedding model (JSON or plain floats)", cmd_embed},
      {"batch", "many prompts as concurrent sessions over one shared cache (prefix cache optional)", cmd_batch},
      {"tokenize", "text -> token ids with a model's tokenizer", cmd_tokenize},
      {"detokenize", "token ids -> text with a model's tokenizer", cmd_detokenize},
      {"template", "a chat request rendered by the model's own (Jinja) chat template", cmd_template},
      {"export", "Hugging Face checkpoint -> GGUF (offgraph and llama.cpp), cache geometry included", cmd_export},
      {"quantize", "GGUF -> GGUF with other weight types (q8_0, q4_k_m, ...)", cmd_quantize},
      {"bench", "prefill and batched decode speed against the machine's measured limits", cmd_bench},
      {"serve", "OpenAI-compatible HTTP server with continuous batching and a shared prefix cache", cmd_serve},
  };
  return kCommands;
}

}  // namespace og::app
