// Run set-up shared by every command and the server: loading the model, its
// tokenizer and chat template; the KV policy and cache a run asks for; the
// sampler's seed. Plain option structs in, loaded objects out; nothing prints
// (warnings are returned for the caller to show).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "format/model_source.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace og {

struct VisionModel;  // runtime/vision_model.h

constexpr int64_t kDefaultMaxCapacity = 4096;  // cap on the default max capacity (model context otherwise)

struct ModelSetup {
  std::string model;           // a .gguf file or an HF checkpoint directory
  std::string tokenizer;       // optional: a tokenizer file or directory instead of the model's
  std::string chat = "auto";   // chat template: auto = the model's own (Jinja), else a built-in name; 0 = raw text
  std::string chat_template_file;  // a Jinja template file instead of the model's (--chat-template-file)
  bool mmap = false;           // keep weights in the mapped file
  bool experts_in_memory = false;  // copy a mixture of experts' expert matrices too (default: mapped)
  // A vision tower in llama.cpp's mmproj GGUF (--mmproj); "" = none, then an HF
  // directory's own tower (config.json vision_config) is loaded if it has one.
  std::string mmproj;
  // --no-mmproj (llama.cpp's): no tower at all, not even an HF directory's own;
  // images are refused as by a text model.
  bool no_mmproj = false;
};

// Everything a run needs, loaded.
struct LoadedModel {
  std::shared_ptr<const ModelSource> source;  // the model's file or directory, opened once (its metadata: model_facts)
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<ChatFormat> tmpl;          // chosen by the run builder (runtime/run_builder.h)
  std::vector<int32_t> stop_ids;               // the model's end ids plus the template's turn end
  std::optional<std::string> model_template;  // the Jinja template stored with the model, if any
  std::map<std::string, std::string> model_template_variants;  // its named variants ("tool_use", ...)
  // The vision tower (runtime/vision_model.h), null for a text-only model.
  std::shared_ptr<const VisionModel> vision;
  double load_s = 0;
};

// The model, its tokenizer and its stored template text (tmpl and stop_ids
// are left to the run builder). Throws og::Error naming the file and the problem.
LoadedModel load_model(const ModelSetup& s);

struct CacheSetup {
  std::string kind = "sequence";    // sequence | reference | batched-sequence | batched-cell
  int64_t max_capacity = 0;         // positions per sequence; 0 = min(model n_ctx, kDefaultMaxCapacity)
  int64_t initial_capacity = 512;   // flat layers start here and double
  std::string storage_dtype = "f16";
  std::vector<int64_t> windows;     // override repeated over the caches; empty = the model's
  int64_t prefill_chunk_size = 0;   // max rows one sequence writes per step; 0 = the model file's
                                    // offgraph.kv.prefill_chunk_size, else 512
  int max_sequences = 1;            // batched kinds: sequences the cache holds at once
  int64_t block_size = 16;          // batched-cell: positions per block
};

// The policy `s` asks for on `model`. A max capacity beyond the model's trained
// context is allowed; *warning (when given) then says so, and names the
// --kv-windows entries used and ignored when there are more than caches.
KvPolicy kv_policy_of(const CacheSetup& s, const Model& model, std::string* warning = nullptr);
KvKind kv_kind_of(const CacheSetup& s);  // throws og::Error for an unknown kind
// The cache; running out of memory building it is an og::Error naming what sizes it.
std::unique_ptr<KvCache> make_cache(const CacheSetup& s, const Model& model, const KvPolicy& policy);

// seed >= 0 is used as is; -1 draws a random seed in [0, 2^63), so that the
// seed a run prints can always be given back to --seed (an int64).
uint64_t resolve_seed(int64_t seed);

}  // namespace og
