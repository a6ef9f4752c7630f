// Run set-up: model + tokenizer + chat template loading, KV policy and cache.
#include "runtime/run_setup.h"

#include <algorithm>
#include <optional>
#include <random>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "format/chat_template_source.h"
#include "model/config.h"
#include "runtime/vision_model.h"

namespace og {

LoadedModel load_model(const ModelSetup& s) {
  LoadedModel l;
  Timer t;
  LoadOptions opts;
  opts.mmap_only = s.mmap;
  opts.experts_in_memory = s.experts_in_memory;
  // One source for the whole run: the model, its tokenizer and its templates
  // take their parts from it; only a separate --tokenizer is a second source.
  l.source = ModelSource::open(s.model);
  l.model = Model::load(*l.source, opts);
  // A separate --tokenizer directory or GGUF file is a second source, opened
  // once too; a tokenizer.json / tokenizer.model file keeps the path readers.
  std::shared_ptr<const ModelSource> tok_src;
  if (!s.tokenizer.empty() && (is_directory(s.tokenizer) || s.tokenizer.ends_with(".gguf")))
    tok_src = ModelSource::open(s.tokenizer, /*weights=*/false);
  l.tok = tok_src               ? Tokenizer::from_source(*tok_src)
          : s.tokenizer.empty() ? Tokenizer::from_source(*l.source)
                                : Tokenizer::from_path(s.tokenizer);
  l.model_template = l.source->chat_template();
  l.model_template_variants = l.source->chat_template_variants();
  // The tokenizer's source may hold the template the model lacks.
  if (!l.model_template && !s.tokenizer.empty())
    l.model_template = tok_src ? tok_src->chat_template() : read_chat_template(s.tokenizer);
  if (l.model_template_variants.empty() && !s.tokenizer.empty())
    l.model_template_variants =
        tok_src ? tok_src->chat_template_variants() : read_chat_template_variants(s.tokenizer);
  OG_CHECK(l.tok->n_vocab() <= l.model->n_vocab(), "the tokenizer has ", l.tok->n_vocab(),
           " tokens but the model only ", l.model->n_vocab());
  // The tower: --mmproj's file, else an HF directory's own (null for text-only
  // and with --no-mmproj).
  OG_CHECK(!s.no_mmproj || s.mmproj.empty(), "--mmproj ", s.mmproj, " and --no-mmproj contradict each other: give one");
  if (!s.no_mmproj) l.vision = load_vision_model(s.mmproj, *l.source, *l.model, *l.tok);
  l.load_s = t.seconds();
  return l;
}

KvKind kv_kind_of(const CacheSetup& s) {
  KvKind k = KvKind::kSequence;
  OG_CHECK(kv_kind_from_name(s.kind, &k), "unknown cache kind ", s.kind);
  return k;
}

KvPolicy kv_policy_of(const CacheSetup& s, const Model& model, std::string* warning) {
  KvPolicy p;
  const int64_t n_ctx = model.config().n_ctx;
  p.max_capacity = s.max_capacity > 0 ? s.max_capacity
                                      : (n_ctx > 0 ? std::min(n_ctx, kDefaultMaxCapacity) : kDefaultMaxCapacity);
  if (warning && n_ctx > 0 && p.max_capacity > n_ctx)
    // No flag is named: the capacity comes from --kv-max-capacity or, in batch
    // and serve, from --max-session-tokens; the user gave one of them.
    *warning = "a cache of " + std::to_string(p.max_capacity) +
               " positions per session exceeds the model's trained context length " + std::to_string(n_ctx);
  p.initial_capacity = std::min(s.initial_capacity, p.max_capacity);
  OG_CHECK(kv_dtype_from_name(s.storage_dtype, &p.dtype), "unknown cache storage dtype ", s.storage_dtype);
  for (int64_t w : s.windows) p.windows.push_back(static_cast<int>(w));
  const size_t n_caches = model.kv_geometry().caches.size();
  if (warning && p.windows.size() > n_caches) {
    std::string used, unused;
    for (size_t i = 0; i < p.windows.size(); ++i) {
      std::string& list = i < n_caches ? used : unused;
      if (!list.empty()) list += ',';
      list += std::to_string(p.windows[i]);
    }
    if (!warning->empty()) *warning += "; ";
    *warning += "--kv-windows has " + std::to_string(p.windows.size()) + " entries but the model has " +
                std::to_string(n_caches) + " cache" + (n_caches == 1 ? "" : "s") + ": using " + used +
                ", ignoring " + unused;
  }
  const int64_t stored = model.config().prefill_chunk_size;  // offgraph.kv.prefill_chunk_size, 0 = none
  p.max_write = s.prefill_chunk_size > 0 ? s.prefill_chunk_size : stored > 0 ? stored : 512;
  p.max_sequences = std::max(1, s.max_sequences);
  OG_CHECK(s.block_size >= 1 && s.block_size <= 4096, "--kv-block-size ", s.block_size, " is outside [1, 4096]");
  p.block_size = static_cast<int>(s.block_size);
  return p;
}

std::unique_ptr<KvCache> make_cache(const CacheSetup& s, const Model& model, const KvPolicy& policy) {
  try {
    return make_kv_cache(kv_kind_of(s), model.kv_geometry(), policy);
  } catch (const std::bad_alloc&) {
    fail("out of memory allocating the KV cache (--kv-cache ", s.kind, ", capacity ", policy.max_capacity,
         ", initial ", policy.initial_capacity, ", max write ", policy.max_write, ", sequences ",
         policy.max_sequences,
         "): lower --kv-max-capacity, --kv-initial-capacity, --kv-windows or --prefill-chunk-size");
  }
}

uint64_t resolve_seed(int64_t seed) {
  if (seed >= 0) return static_cast<uint64_t>(seed);
  std::random_device rd;
  return ((uint64_t{rd()} << 32) ^ rd()) & uint64_t{0x7fffffffffffffff};
}

}  // namespace og
