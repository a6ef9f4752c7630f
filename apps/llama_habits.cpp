// The answers to llama.cpp's flags that offgraph does not have (llama_habits.h).
#include "llama_habits.h"

#include <vector>

namespace og::app {

namespace {

struct Habit {
  std::vector<const char*> spellings;
  const char* why;
};

const std::vector<Habit>& habits() {
  static const std::vector<Habit> h = {
      {{"-ngl", "--n-gpu-layers", "--gpu-layers"},
       "llama.cpp's GPU offload; offgraph runs on the CPU, so there are no layers to offload (drop the flag)"},
      {{"--lora", "--lora-scaled", "--lora-base", "--control-vector"},
       "adapters are not applied at run time; merge the adapter into the Hugging Face checkpoint and convert it "
       "with `offgraph export`"},
      // run, chat, batch, serve and bench register -md, --model-draft, --draft, --draft-max and
      // --draft-min themselves (apps/spec_flags.cpp); these answers reach the other commands.
      {{"-md", "--model-draft", "--draft", "--draft-max", "--draft-min", "-cd", "--ctx-size-draft"},
       "speculative decoding runs in run, chat, batch, serve and bench: --model-draft PATH or --spec ngram, with "
       "--draft-max (the draft's cache takes the target's capacity); elsewhere drop the flag"},
      // run, chat, batch, serve and inspect register --mmproj (apps/shared_flags.cpp); run --image.
      {{"--mmproj"}, "run, chat, batch, serve and inspect take --mmproj FILE (a vision tower in llama.cpp's mmproj "
                     "GGUF); elsewhere drop the flag"},
      {{"--mmproj-url"}, "offgraph does not download: give a local mmproj file with --mmproj"},
      {{"--image"}, "images go to run --image FILE, chat's /image FILE and serve's image_url parts, with a vision "
                    "tower (--mmproj); elsewhere drop the flag"},
      {{"-fa", "--flash-attn"},
       "attention always runs fused over the off-graph cache; there is nothing to turn on (drop the flag)"},
      {{"--no-mmap"}, "weights are copied into huge pages by default already (--mmap keeps them in the mapped file)"},
      {{"--mlock"}, "weights are copied into memory at load by default; there is nothing to lock (drop the flag)"},
      {{"-ub", "--ubatch-size", "--batch-size"},
       "use --prefill-chunk-size (prompt rows one session writes per step) or --step-tokens (batch, serve: rows per "
       "step)"},
      {{"-ctk", "--cache-type-k", "-ctv", "--cache-type-v"},
       "use --kv-storage-dtype (one type for K and V: f32, f16, bf16 or q8_0)"},
      {{"-cnv", "--conversation", "-if", "--interactive-first"},
       "use `offgraph chat` (or `offgraph run --interactive`)"},
      {{"--jinja", "--chat-template", "--chat-template-file"},
       "pick the chat template with --chat NAME (auto: the one stored with the model)"},
      {{"-f", "--file"}, "give the prompt with --prompt (run) or a prompts file with --prompts-file (batch)"},
      // run, chat and batch register --grammar, --json-schema and -j themselves (apps/llm_common.cpp).
      {{"--grammar", "--grammar-file", "--json-schema", "-j"},
       "run, chat and batch take --json-schema FILE|JSON and --grammar FILE (a GBNF file); serve constrains each "
       "request by its response_format, json_schema or grammar field; elsewhere drop the flag"},
      {{"--rope-freq-base", "--rope-freq-scale", "--rope-scaling", "--rope-scale", "--yarn-orig-ctx",
        "--yarn-ext-factor", "--yarn-attn-factor", "--yarn-beta-fast", "--yarn-beta-slow"},
       "RoPE settings are read from the model file and cannot be overridden"},
      {{"--numa", "-sm", "--split-mode", "-ts", "--tensor-split", "-mg", "--main-gpu", "-dev", "--device"},
       "offgraph runs on this machine's CPU cores; set how many with --threads"},
      {{"--keep", "--n-keep", "--context-shift"},
       "the context is not shifted: a full cache stops the generation; raise --kv-max-capacity"},
      {{"-cb", "--cont-batching"}, "continuous batching is always on in `offgraph batch` and `offgraph serve`"},
      {{"-hf", "-hfr", "--hf-repo", "-mu", "--model-url"},
       "offgraph does not download models: give a local .gguf file or checkpoint directory with --model"},
      {{"-ins", "--instruct"}, "use `offgraph chat`, which renders the model's chat template"},
  };
  return h;
}

}  // namespace

void add_llama_cpp_habits(Flags& fl, const std::string& command) {
  for (const Habit& h : habits())
    for (const char* s : h.spellings) fl.add_foreign(s, std::string("llama.cpp's flag; ") + h.why);
  if (command == "serve" || command == "batch") {
    fl.add_foreign("-c", "llama.cpp's -c is the context of all sequences together; offgraph sizes each session: "
                         "--kv-max-capacity (positions per session) with --parallel or --max-decode-sequences (sessions)");
    fl.add_foreign("--ctx-size", "llama.cpp's --ctx-size is the context of all sequences together; offgraph sizes "
                                 "each session: --kv-max-capacity (positions per session) with --parallel or --max-decode-sequences (sessions)");
  } else if (command == "run" || command == "chat") {
    fl.add_foreign("-np", "llama.cpp's parallel sequences; `offgraph batch --max-decode-sequences N` or `offgraph "
                          "serve --parallel N` run many sessions at once");
    fl.add_foreign("--parallel", "one session here; `offgraph batch --max-decode-sequences N` or `offgraph serve "
                                 "--parallel N` run many sessions at once");
    fl.add_foreign("-b", "llama.cpp's logical batch size; use --prefill-chunk-size (prompt rows per step)");
  }
}

}  // namespace og::app
