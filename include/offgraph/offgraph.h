/* offgraph.h: the C API of offgraph, the LLM runtime whose KV cache lives off
 * the model graph. Opaque handles; every call returns an og_status, and on an
 * error og_last_error() gives one line saying what was wrong (no C++ exception
 * crosses this header).
 *
 * Ownership. Every object a call creates is freed by its matching *_free /
 * og_model_close. Strings and token arrays returned in og_string / og_tokens
 * belong to the caller (og_string_free, og_tokens_free). Pointers returned as
 * `const` (model info strings, token pieces, logits, stream text) belong to
 * the library and stay valid as each function says.
 *
 * Handles. A freed or closed handle, or one that was never created, is
 * recognised and answered with OG_ERR_INVALID_HANDLE (never a crash). A
 * session and an engine keep their model's weights alive: closing a model
 * while they exist is allowed; the model handle itself is then unusable.
 *
 * Thread safety. og_model: every call may be made from any thread at once.
 * og_session: one thread at a time; a call made while another thread (or a
 * callback of the same session) is inside a call on it is refused with
 * OG_ERR_BUSY, except og_session_cancel and og_session_stream_cancel, which any
 * thread may call at any time. og_engine: every call may be made from any thread at once.
 * og_last_error() is per thread.
 *
 * ABI compatibility. Option structs (og_*_options) begin with struct_size, which
 * their *_init function sets; always initialise them with it. They only ever grow
 * at the end: the library reads the first struct_size bytes, so a program built
 * against an older header keeps the defaults of the fields it lacks, and refuses
 * (OG_ERR_INVALID_ARGUMENT) a struct_size of 0 or one larger than its own (a
 * program built against a newer header). Every other change to the ABI (a field of
 * an output struct such as og_model_info or og_generation, a signature) changes
 * OG_ABI_VERSION and the version node of the exported symbols (OFFGRAPH_ABI_<n>,
 * cmake/offgraph.map), so a program built against another ABI fails to load
 * ("version `OFFGRAPH_ABI_<n>' not found") instead of misreading memory. The SONAME
 * (liboffgraph.so.<major>) changes with the major version.
 */
#ifndef OFFGRAPH_H
#define OFFGRAPH_H

#include <stddef.h>
#include <stdint.h>

/* Exported from liboffgraph.so (built with hidden visibility elsewhere). */
#if defined(OG_BUILDING_LIBRARY)
#define OG_API __attribute__((visibility("default")))
#else
#define OG_API
#endif

#define OG_VERSION_MAJOR 0
#define OG_VERSION_MINOR 1
#define OG_VERSION_PATCH 0
#define OG_VERSION_STRING "0.1.0"
/* The ABI the header describes; the library's symbols carry the version node OFFGRAPH_ABI_2. */
#define OG_ABI_VERSION 2
/* Comparable version number: major * 10000 + minor * 100 + patch. */
#define OG_VERSION (OG_VERSION_MAJOR * 10000 + OG_VERSION_MINOR * 100 + OG_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

typedef enum og_status {
  OG_OK = 0,
  OG_ERR_INVALID_ARGUMENT = 1, /* a null pointer, a bad option value, an unknown name */
  OG_ERR_INVALID_HANDLE = 2,   /* null, freed, closed or never-created handle */
  OG_ERR_OUT_OF_RANGE = 3,     /* a token id outside [0, n_vocab), a length past the history */
  OG_ERR_BUSY = 4,             /* the session is in use by another thread (or its own callback) */
  OG_ERR_STATE = 5,            /* not now: e.g. no stream running, no logits yet, nothing to undo */
  OG_ERR_CAPACITY = 6,         /* the tokens do not fit in the session's cache */
  OG_ERR_RUNTIME = 7,          /* a failure while loading or running (a bad file, out of memory, ...) */
  OG_ERR_CANCELLED = 8         /* og_session_cancel stopped a prefill (which is taken back whole) */
} og_status;

/* The library's version, "MAJOR.MINOR.PATCH" (equals OG_VERSION_STRING of the headers it was built with). */
OG_API const char* og_version(void);
/* The message of this thread's last failed call ("" when none); valid until its next failing call. */
OG_API const char* og_last_error(void);
/* "ok", "invalid_argument", "invalid_handle", "out_of_range", "busy", "state", "capacity", "runtime",
 * "cancelled". */
OG_API const char* og_status_name(og_status status);

/* Memory the library hands to the caller. */
typedef struct og_string {
  char* data; /* NUL-terminated; may hold other NUL bytes (len is the length) */
  size_t len;
} og_string;
typedef struct og_tokens {
  int32_t* ids;
  size_t n;
} og_tokens;
/* Free what a call returned; a zeroed or already freed struct is fine (the fields are reset). */
OG_API void og_string_free(og_string* s);
OG_API void og_tokens_free(og_tokens* t);

/* ------------------------------------------------------------------ limits */

/* The process's bounds on untrusted input: a chat template's render (og_session_chat,
 * og_chat_render, og_chat_encode) and the JSON schemas of a chat request (response_format,
 * tools). The same bounds, defaults and ranges as serve's flags of the same names
 * (--template-max-work, ..., --schema-max-work; docs/commands.md); a render or schema past
 * one is OG_ERR_INVALID_ARGUMENT naming it. */
typedef struct og_limits {
  size_t struct_size;                 /* sizeof(og_limits), set by og_limits_init */
  int64_t template_max_work;          /* [0, 2^50] work units of one render; 0 (default) = 64 per value byte */
  int64_t template_max_ms;            /* [0, 3600000] wall-clock ms of one render (10000); 0 = none */
  int64_t template_max_value_bytes;   /* [1024, 2^32] largest value a render builds, and its output (16 MiB) */
  int64_t template_max_memory_bytes;  /* [2^20, 2^40] bytes of values one render holds at once (256 MiB) */
  int64_t schema_max_properties;      /* [1, 2^20] properties of one schema object (1024) */
  int64_t schema_max_branches;        /* [1, 2^20] anyOf/oneOf branches of one schema (1024) */
  int64_t schema_max_enum_values;     /* [1, 2^24] values of one enum (65536) */
  int64_t schema_max_work;            /* [1, 2^30] subschemas, enum values and properties of one request (2^18) */
} og_limits;
/* The defaults above (serve's without flags) and struct_size; NULL is ignored. */
OG_API void og_limits_init(og_limits* limits);
/* The limits in force (out->struct_size set by the caller, as og_limits_init sets it). */
OG_API og_status og_get_limits(og_limits* out);
/* Makes `limits` the process's (a value outside its range is OG_ERR_INVALID_ARGUMENT naming
 * the field, and nothing changes). Meant for start-up: renders and schema compilations
 * running in other threads at the time are not synchronised with the change. */
OG_API og_status og_set_limits(const og_limits* limits);

/* ------------------------------------------------------------------- model */

typedef struct og_model og_model;

typedef struct og_model_options {
  size_t struct_size;        /* sizeof(og_model_options), set by og_model_options_init */
  const char* tokenizer;     /* NULL: the model's own; else a tokenizer file or directory */
  const char* chat_template; /* NULL or "auto": the model's; a built-in name; "0": raw text */
  int mmap;                  /* nonzero: keep the weights in the mapped file */
  int threads;               /* forward-pass workers (process-wide); 0 = all cores */
  /* nonzero: copy a mixture of experts' expert matrices into memory too (faster when the
   * file fits); 0: they stay in the mapped file and only the routed ones are paged in. The
   * dense part is copied either way; with mmap nothing is copied. */
  int experts_in_memory;
  /* A vision tower in llama.cpp's mmproj GGUF, loaded beside the model (as `--mmproj`);
   * NULL = none (a Hugging Face directory's own tower loads without it). Images in a
   * chat (og_chat_request.images) need a tower. */
  const char* mmproj;
  /* nonzero: no vision tower at all, not even a Hugging Face directory's own (as
   * `--no-mmproj`); images are then refused as by a text-only model. With mmproj set it
   * is OG_ERR_INVALID_ARGUMENT. Default 0. */
  int no_mmproj;
} og_model_options;
/* Sets every field to its default (and struct_size); NULL is ignored. */
OG_API void og_model_options_init(og_model_options* opts);

/* Loads a .gguf file or an HF checkpoint directory. opts may be NULL (defaults). */
OG_API og_status og_model_open(const char* path, const og_model_options* opts, og_model** out);
/* Closes the handle (NULL is fine). Sessions and engines made from it keep working. */
OG_API og_status og_model_close(og_model* model);

typedef struct og_model_info {
  const char* architecture;   /* "llama", "qwen2", ...; valid until og_model_close */
  const char* chat_template;  /* the chat template in use ("llama3", "chatml", "0" = raw text, ...) */
  const char* tokenizer_kind; /* e.g. "gguf llama (SentencePiece BPE)" */
  int32_t n_vocab;
  int64_t n_ctx;   /* trained context length */
  int64_t d_model;
  int32_t n_layers;
  int32_t n_heads;    /* of layer 0 */
  int32_t n_kv_heads; /* of layer 0 */
  int32_t head_dim;   /* of layer 0 (keys) */
  int64_t d_ff;       /* of layer 0 */
  int32_t n_kv_caches; /* caches the model needs (layers sharing KV share one) */
  int64_t weights_copied_bytes;        /* weight matrices copied into memory at load */
  int64_t weights_mapped_expert_bytes; /* expert matrices used in place from the mapped file */
  int32_t generates; /* nonzero: sessions and engines run it (causal attention); 0: it only embeds */
  int32_t embeds;    /* nonzero: og_embed works (the file declares a pooling type other than none) */
  int64_t embedding_dim; /* the width of og_embed's vectors; 0 when it does not embed */
  const char* pooling;   /* "mean", "cls", "last", "none" (per-token vectors, which og_embed refuses), or
                          * "" when the file declares no pooling type; valid until og_model_close */
} og_model_info;
/* The model's facts above (any thread). */
OG_API og_status og_model_get_info(const og_model* model, og_model_info* out);

/* --------------------------------------------------------------- embeddings */

typedef struct og_embed_options {
  size_t struct_size; /* sizeof(og_embed_options), set by og_embed_options_init */
  /* How each vector is normalised: 2 = euclidean (default, unit length), -1 = none,
   * 0 = max-abs scaled to the int16 range, 1 = taxicab, p > 2 = p-norm (as llama.cpp's
   * --embd-normalize). */
  int32_t normalize;
  int64_t dimensions; /* keep the first N values (Matryoshka), then normalise; 0 = the full width */
} og_embed_options;
/* normalize 2, dimensions 0 (and struct_size); NULL is ignored. */
OG_API void og_embed_options_init(og_embed_options* opts);

/* Vectors handed to the caller (og_embeddings_free). */
typedef struct og_embeddings {
  float* data;           /* n * dim floats, vector i at data + i * dim */
  size_t n;              /* one vector per input, in order */
  int64_t dim;           /* values per vector */
  int64_t prompt_tokens; /* tokens of all inputs */
} og_embeddings;
/* Frees the vectors and zeroes *e; a zeroed or already freed struct is fine. */
OG_API void og_embeddings_free(og_embeddings* e);

/* Embeds n >= 1 texts (NUL-terminated, non-empty; each encoded with the vocabulary's
 * BOS/EOS, special-token texts kept as text) with the model's pooling and dense
 * projections, exactly as `offgraph embed` and POST /v1/embeddings do (the same vectors,
 * bit for bit). opts may be NULL (defaults). OG_ERR_INVALID_ARGUMENT: a model that does
 * not embed (og_model_info.embeds), an empty text, one longer than the model's context,
 * dimensions out of range. Any thread; embeddings run one at a time per model. */
OG_API og_status og_embed(const og_model* model, const char* const* texts, size_t n, const og_embed_options* opts,
                          og_embeddings* out);
/* The same over token ids: input i is ids[i][0 .. lens[i]) (each id in [0, n_vocab)). */
OG_API og_status og_embed_tokens(const og_model* model, const int32_t* const* ids, const size_t* lens, size_t n,
                                 const og_embed_options* opts, og_embeddings* out);

/* --------------------------------------------------------------- tokenizer */

typedef struct og_special_ids {
  int32_t bos, eos, eot, pad, unk; /* -1 = none */
  int add_bos;                     /* nonzero: encode with specials prepends BOS */
} og_special_ids;
/* The vocabulary's special ids and whether encoding with specials prepends BOS. */
OG_API og_status og_special_tokens(const og_model* model, og_special_ids* out);
/* Every id that ends an assistant turn (the vocabulary's and the chat template's). */
OG_API og_status og_stop_ids(const og_model* model, og_tokens* out);

/* add_special: BOS/EOS as the vocabulary says; parse_special: special-token texts in `text` become special tokens. */
OG_API og_status og_tokenize(const og_model* model, const char* text, size_t len, int add_special,
                             int parse_special, og_tokens* out);
/* skip_special: control tokens spell nothing. Any id outside [0, n_vocab) is OG_ERR_OUT_OF_RANGE. */
OG_API og_status og_detokenize(const og_model* model, const int32_t* ids, size_t n, int skip_special,
                               og_string* out);
/* The vocabulary entry of `id` as stored; valid until og_model_close. */
OG_API og_status og_token_piece(const og_model* model, int32_t id, const char** piece, size_t* len);

/* ----------------------------------------------------------- chat template */

typedef struct og_chat_message {
  const char* role; /* "system", "user" or "assistant" */
  const char* content;
} og_chat_message;
/* The conversation as text (for display; use og_chat_encode to get ids). */
OG_API og_status og_chat_render(const og_model* model, const og_chat_message* messages, size_t n,
                                int add_generation_prompt, og_string* out);
/* The conversation as the ids a new session prefills (BOS as the vocabulary wants; contents cannot inject specials). */
OG_API og_status og_chat_encode(const og_model* model, const og_chat_message* messages, size_t n,
                                int add_generation_prompt, og_tokens* out);

/* ----------------------------------------------------------------- session */

typedef struct og_session og_session;

typedef struct og_session_options {
  size_t struct_size;         /* sizeof(og_session_options), set by og_session_options_init */
  const char* kv_kind;        /* "sequence" (default) or "reference" */
  const char* kv_dtype;       /* cache storage: "f16" (default), "f32", "bf16", "q8_0", ... */
  int64_t kv_max_capacity;    /* positions; 0 = min(model context, 4096) */
  int64_t kv_initial_capacity; /* flat layers start here and double; default 512 */
  const int64_t* kv_windows;  /* window override repeated over the caches (0 = full); NULL = the model's */
  size_t n_kv_windows;
  int64_t prefill_chunk_size; /* rows per prefill step; 0 = the model file's, else 512 */
  /* Speculative decoding in every turn of the session (og_session_generate, the stream, chat):
   * the fields, bounds and errors of og_engine_options' (docs/speculative.md). Greedy turns
   * give plain decoding's tokens; sampled ones keep the target's distribution; under a
   * grammar with temperature > 0 a turn decodes plainly. A draft model's cache is the
   * session's kind, dtype and kv_max_capacity; a fork gets a proposer of its own. */
  int32_t spec_ngram_size;    /* prompt lookup: 1-16 on; 0 = off (default) */
  int32_t spec_ngram_min;     /* 1 .. spec_ngram_size (default 1) */
  int32_t spec_draft_max;     /* 1-256 (default 4) */
  int32_t spec_draft_min;     /* 0 .. spec_draft_max (default 0) */
  og_model* draft_model;      /* a draft model instead of prompt lookup (kept alive by the session); NULL = none */
  double spec_draft_p_min;    /* [0, 1] (default 0.75) */
} og_session_options;
/* kv_kind "sequence", kv_dtype "f16", kv_max_capacity 0, kv_initial_capacity 512, the
 * model's windows, prefill_chunk_size 0, no speculation (spec_ngram_size 0, spec_ngram_min 1,
 * spec_draft_max 4, spec_draft_min 0, draft_model NULL, spec_draft_p_min 0.75) (and
 * struct_size); NULL is ignored. */
OG_API void og_session_options_init(og_session_options* opts);

/* The bounds are the server's and the commands' (docs/library.md, "Bounds, defaults and
 * stop reasons"); a value outside is OG_ERR_INVALID_ARGUMENT naming the field, e.g.
 * "sampler.temperature is 3, outside [0, 2]". */
typedef struct og_sampler_options {
  double temperature; /* [0, 2]; 0 = greedy (default) */
  int32_t top_k;      /* 0 or -1 = off */
  double top_p;       /* (0, 1]; 1 = off */
  double min_p;       /* [0, 1]; 0 = off */
  double repeat_penalty; /* (0, 100]; 1 = off */
  int32_t repeat_last_n; /* >= 0; default 64 */
  double presence_penalty, frequency_penalty; /* [-2, 2]; 0 = off */
  int64_t seed;       /* >= 0: as is; -1 = random */
} og_sampler_options;

/* Called for each sampled token / each piece of text (never split inside a UTF-8
 * character, stop strings never included). Return nonzero to cancel: the turn
 * ends at the next step with OG_STOP_CANCELLED, keeping what was generated. */
typedef int (*og_token_callback)(void* user_data, int32_t token);
typedef int (*og_text_callback)(void* user_data, const char* text, size_t len);

typedef struct og_generate_options {
  size_t struct_size;       /* sizeof(og_generate_options), set by og_generate_options_init */
  int64_t max_new_tokens;   /* [0, 2^31 - 1]; default 256 */
  og_sampler_options sampler;
  const char* const* stop_strings; /* text that ends generation (never streamed) */
  size_t n_stop_strings;
  int stop_at_model_stop_ids; /* nonzero (default): the model's end ids end generation */
  og_token_callback on_token; /* optional */
  og_text_callback on_text;   /* optional */
  void* user_data;
  /* Sessions only (og_engine_submit refuses them): nonzero logprobs fills
   * og_generation.logprobs with each generated token's log-probability, the natural log
   * of the softmax of the model's raw logits (before temperature and filters), as the
   * server's `logprobs` are; top_logprobs in [0, 20] adds that many most likely
   * alternatives per token (most likely first, ties to the lower id). */
  int logprobs;
  int32_t top_logprobs;
} og_generate_options;
/* max_new_tokens 256, greedy sampling (temperature 0, top_p 1, repeat_penalty 1,
 * repeat_last_n 64, seed 0), no stop strings, stop_at_model_stop_ids 1, no callbacks, no
 * logprobs (and struct_size); NULL is ignored. */
OG_API void og_generate_options_init(og_generate_options* opts);

typedef enum og_stop_reason {
  OG_STOP_NONE = 0,
  OG_STOP_TOKEN = 1,       /* a stop id was sampled (it is in the tokens and the history) */
  OG_STOP_STRING = 2,      /* a stop string appeared (not in the text) */
  OG_STOP_MAX_TOKENS = 3,
  OG_STOP_CAPACITY = 4,    /* the cache is full */
  OG_STOP_CANCELLED = 5    /* a callback or og_session_stream_cancel */
} og_stop_reason;
/* "none", "stop_token", "stop_string", "max_new_tokens", "capacity", "cancelled": these
 * names are kept for 0.x; everywhere else (the engine's og_finish_reason, the server, the
 * commands) a turn ends with OpenAI's finish reasons: TOKEN and STRING are "stop",
 * MAX_TOKENS and CAPACITY "length". */
OG_API const char* og_stop_reason_name(og_stop_reason reason);

typedef struct og_generation {
  og_tokens tokens; /* the generated ids, the final one included */
  og_string text;   /* the generated text (stop string excluded) */
  og_stop_reason stop_reason;
  int64_t prompt_tokens; /* tokens prefilled this turn */
  /* With og_generate_options.logprobs (else NULL and 0): logprobs[i] is tokens.ids[i]'s
   * log-probability; top_ids / top_logprobs hold top_k alternatives per token,
   * token i's at [i * top_k, (i + 1) * top_k) (NULL when top_k is 0). */
  float* logprobs;
  int32_t top_k;
  int32_t* top_ids;
  float* top_logprobs;
} og_generation;
/* Frees what og_session_generate / og_session_stream_finish returned and zeroes the
 * pointers; a zeroed or already freed struct is fine. */
OG_API void og_generation_free(og_generation* g);

/* A session: one conversation over its own KV cache of the policy in opts (NULL: defaults). */
OG_API og_status og_session_new(og_model* model, const og_session_options* opts, og_session** out);
/* Frees the session (NULL is fine); a running stream is abandoned. OG_ERR_BUSY while
 * another thread is inside a call on it. */
OG_API og_status og_session_free(og_session* session);
/* A new session holding the same history (recomputed into its own cache of the same policy) and logits. */
OG_API og_status og_session_fork(og_session* session, og_session** out);

/* Appends `tokens` to the history and the cache without generating. want_logits:
 * keep the logits of the last row (og_session_logits). */
OG_API og_status og_session_prefill(og_session* session, const int32_t* tokens, size_t n, int want_logits);
/* Appends an image (encoded bytes as og_chat_image's) to the history as the model's
 * chat template would place it (Gemma 3: "\n\n<start_of_image>", the tower's soft
 * tokens, "<end_of_image>\n\n"), pending: the next prefill or generate forwards it
 * (og_session_prefill with n = 0 forwards it alone). For prompts built as tokens;
 * og_session_chat places a chat's images itself. OG_ERR_INVALID_ARGUMENT for a bad
 * image or a model without a vision tower; OG_ERR_CAPACITY when it does not fit;
 * og_session_undo takes it back with the next turn's tokens. */
OG_API og_status og_session_append_image(og_session* session, const uint8_t* data, size_t size);
/* One turn: prefills `prompt` (may be empty when the history is not), then samples until a stop rule. */
OG_API og_status og_session_generate(og_session* session, const int32_t* prompt, size_t n,
                                     const og_generate_options* opts, og_generation* out);

/* The same turn pulled step by step: start, then next until *done, then finish.
 * Callbacks in opts are called as in og_session_generate. The session is busy
 * (for other threads) only inside each call, but no other call but
 * og_session_stream_* is accepted until finish. */
OG_API og_status og_session_stream_start(og_session* session, const int32_t* prompt, size_t n,
                                         const og_generate_options* opts);
/* Runs one chunk of the prompt's prefill (one cache write, prefill_chunk_size rows)
 * when more than a chunk is left, else steps until a token is sampled or the turn
 * ends. *token: the sampled id (-1 when none: a prefill chunk, or a turn that ended
 * without one); *text and *len: the text that became ready (owned by the session,
 * valid until the next call on it); *done: nonzero once the turn has ended. */
OG_API og_status og_session_stream_next(og_session* session, int32_t* token, const char** text, size_t* len,
                                        int* done);
/* Ends the turn early, keeping what was generated (reason OG_STOP_CANCELLED); finish still
 * follows. Any thread, at any time, even while og_session_stream_next runs (never
 * OG_ERR_BUSY): the turn stops before its next forward step (within one prefill chunk).
 * OG_ERR_STATE when no stream is running. */
OG_API og_status og_session_stream_cancel(og_session* session);
/* Cancels what runs on the session now, from any thread (never OG_ERR_BUSY): it stops
 * before its next forward step, so within one prefill chunk (og_session_options.
 * prefill_chunk_size rows). A generate or stream ends as OG_STOP_CANCELLED keeping what
 * was generated (a prompt cut mid-prefill stays in the history, and the next turn
 * prefills the rest); a prefill is taken back whole and returns OG_ERR_CANCELLED.
 * Between two og_session_stream_next calls it ends the stream at the next one; made
 * while nothing runs, it is forgotten when the next prefill, generate or stream starts. */
OG_API og_status og_session_cancel(og_session* session);
/* Ends a stream (done or not: not done counts as cancelled); out may be NULL. */
OG_API og_status og_session_stream_finish(og_session* session, og_generation* out);

/* The logits [n_vocab] of the last row that asked for them (the distribution the last
 * token was sampled from, or a prefill with want_logits). The buffer is the session's
 * and the same for its whole life (free it and it is gone); each og_session_logits call
 * refreshes its values. OG_ERR_STATE when there are none (new, reset, rewound). */
OG_API og_status og_session_logits(og_session* session, const float** logits, size_t* n_vocab);

/* The number of tokens in the history (the position the next token takes). */
OG_API og_status og_session_position(og_session* session, int64_t* position);
/* A copy of the history's token ids (og_tokens_free). */
OG_API og_status og_session_history(og_session* session, og_tokens* out);
/* The most positions the session's cache may hold (kv_max_capacity as resolved: the
 * maximum, not what is allocated now; og_session_stats.cache_bytes_allocated says that).
 * A prompt fits while position + its length <= capacity. */
OG_API og_status og_session_capacity(og_session* session, int64_t* capacity);
/* Truncates the history (and cache) to `length` tokens. */
OG_API og_status og_session_rewind(og_session* session, int64_t length);
/* Takes back the last prefill or generate (turn by turn); OG_ERR_STATE when there is none. */
OG_API og_status og_session_undo(og_session* session);
/* Empty history, cache cleared. */
OG_API og_status og_session_reset(og_session* session);

/* Writes the session's state to `path` (replaced whole, never left half-written): the
 * history, the cache's contents, the undo marks and the last logits, with the model's
 * fingerprint, in a versioned file. Sampling keeps no state between turns (each turn's
 * sampler comes from its options and seed), so none is saved. OG_ERR_STATE while a
 * stream runs, when a windowed cache has dropped positions of the history, or when the
 * history holds an image (images are not stored yet). */
OG_API og_status og_session_save(og_session* session, const char* path);
/* Replaces the session's state with the one saved in `path`: the session then continues
 * exactly as the saved one would have (the same tokens, greedy or seeded). The session's
 * kv_dtype must be the saved one's, and the history must fit its capacity
 * (OG_ERR_CAPACITY). OG_ERR_INVALID_ARGUMENT, the session unchanged: no such file, not
 * a session file, another version, truncated or corrupt (a checksum covers the file),
 * saved from another model (its fingerprint differs) or with another kv_dtype. */
OG_API og_status og_session_load(og_session* session, const char* path);

typedef struct og_session_stats {
  int64_t prompt_tokens, generated_tokens, decode_steps, recomputed_tokens;
  double ttft_s, prefill_s, decode_s, sampling_s;
  int64_t cache_positions, cache_capacity, cache_bytes_allocated;
} og_session_stats;
/* The session's counters since it was created (prompt and generated tokens, decode steps,
 * tokens recomputed after a ring lost them, seconds to first token / in prefill / decode /
 * sampling) and its cache: positions held, capacity (og_session_capacity) and bytes
 * allocated now. */
OG_API og_status og_session_get_stats(og_session* session, og_session_stats* out);

/* -------------------------------------------------- chat: tools, structured output */

/* A chat request as POST /v1/chat/completions takes it, run on a session: the
 * library renders it with the model's chat template, constrains the reply (a
 * required tool call, response_format, a grammar; a reasoning model reasons
 * first, bounded by max_reasoning_tokens) and splits it into reasoning,
 * content and tool calls exactly as the server does, so the same request and
 * seed give the same reply as `offgraph serve`. The element structs below
 * (og_chat_msg, og_chat_tool_call, og_chat_tool) are laid out in arrays and so
 * carry no struct_size: a change to them changes OG_ABI_VERSION. */

/* A tool call of an assistant message (input) or of a reply (og_chat_result). */
typedef struct og_chat_tool_call {
  const char* id;        /* the call's id ("call_..."); NULL = none */
  const char* name;      /* the function's name (required) */
  const char* arguments; /* a JSON object's text; NULL or "" = {} */
} og_chat_tool_call;

typedef struct og_chat_msg {
  const char* role;    /* "system", "developer", "user", "assistant" or "tool" */
  const char* content; /* required (NULL: only an assistant message of tool calls) */
  const char* reasoning_content; /* assistant: its reasoning; NULL = none */
  const char* name;              /* NULL = none */
  const og_chat_tool_call* tool_calls; /* assistant: the calls it made */
  size_t n_tool_calls;
  const char* tool_call_id; /* tool: the id of the call this message answers */
} og_chat_msg;

typedef struct og_chat_tool {
  const char* name;        /* 1-64 of A-Z a-z 0-9 _ - . : (unique in the request) */
  const char* description; /* NULL = none */
  const char* parameters;  /* its JSON schema's text; NULL or "" = no arguments */
  int strict;              /* nonzero: OpenAI's strict (additionalProperties false by default) */
} og_chat_tool;

/* An image in a chat message (og_chat_request.images): the encoded bytes (PNG, JPEG,
 * WebP or GIF's first frame, told by their first bytes; at most 32 MiB), placed in
 * user message `message` before byte `offset` of its content (0: before the text; the
 * content's length or more: after it), where the model's chat template puts an image
 * part (Gemma 3's writes <start_of_image> there). Images at one place keep their order. */
typedef struct og_chat_image {
  size_t message;
  size_t offset;
  const uint8_t* data;
  size_t size;
} og_chat_image;

typedef struct og_chat_request {
  size_t struct_size; /* sizeof(og_chat_request), set by og_chat_request_init */
  const og_chat_msg* messages; /* at least one */
  size_t n_messages;
  const og_chat_tool* tools; /* at most 512 */
  size_t n_tools;
  /* NULL: "auto" with tools, "none" without; "none", "auto", "required" (some
   * call), or the name of one of the tools (that call). */
  const char* tool_choice;
  int parallel_tool_calls; /* nonzero (default): a reply may make several calls; 0: one at most */
  /* NULL or "text": free text; "json_object": any JSON object; "json_schema": JSON valid for json_schema. */
  const char* response_format;
  const char* json_schema; /* with "json_schema": the schema's text */
  int json_schema_strict;  /* with "json_schema": OpenAI's strict */
  const char* grammar;     /* a GBNF grammar the reply matches (NULL = none; not with response_format JSON) */
  /* Tokens a constrained reply (structured output, a required call) may reason
   * before its close marker is forced: -1 (default) = 1024; 0 = no reasoning. */
  int64_t max_reasoning_tokens;
  const char* chat_template_kwargs; /* a JSON object's text: template variables (enable_thinking, ...); NULL = none */
  const char* reasoning_effort;     /* NULL, "none", "minimal", "low", "medium", "high" (a template variable) */
  /* Images in the user messages (at most 64), for a model with a vision tower
   * (og_model_options.mmproj, or an HF directory's own): each goes through the tower
   * once per session (the same bytes in a later turn are not encoded again). A bad
   * image or a model without a tower is OG_ERR_INVALID_ARGUMENT naming the image
   * ("images[0]: image: png: truncated data"). */
  const og_chat_image* images;
  size_t n_images;
} og_chat_request;
/* No messages, no tools, tool_choice NULL, parallel_tool_calls 1, free text,
 * max_reasoning_tokens -1 (and struct_size); NULL is ignored. */
OG_API void og_chat_request_init(og_chat_request* req);

/* A reply handed to the caller (og_chat_result_free). */
typedef struct og_chat_call {
  og_string id;        /* drawn ("call_" + 24 letters and digits; 9 for Mistral's formats) */
  og_string name;
  og_string arguments; /* a JSON object's text */
} og_chat_call;
typedef struct og_chat_result {
  og_string content;           /* the answer (a constrained reply's JSON) */
  og_string reasoning_content; /* the reasoning before it ("" = none) */
  og_chat_call* tool_calls;
  size_t n_tool_calls;
  const char* finish_reason; /* OpenAI's: "stop", "length" (max_new_tokens or the cache ran out), "tool_calls" */
  int64_t prompt_tokens;     /* the rendered conversation's tokens */
  int64_t cached_tokens;     /* of them, already in the session's history (not prefilled again) */
  int64_t completion_tokens; /* generated */
  og_generation generation;  /* the turn as generated: tokens, raw text (markers kept), stop_reason, logprobs */
} og_chat_result;
/* Frees what og_session_chat / og_session_chat_finish returned and zeroes it. */
OG_API void og_chat_result_free(og_chat_result* r);

/* One chat turn on the session: renders the whole conversation in `req`,
 * keeps the part of the session's history it shares (the previous turn's
 * prompt and reply, when the template renders them the same way; the rest is
 * rewound), prefills the remainder and generates with `opts` (NULL: defaults;
 * its sampler, max_new_tokens, stop strings, callbacks and logprobs apply; its
 * callbacks see the raw text). OG_ERR_INVALID_ARGUMENT naming the request's
 * field (as OpenAI's param: "messages[1].role", "tool_choice",
 * "response_format.json_schema.schema", ...) for a bad request;
 * OG_ERR_CAPACITY when the conversation does not fit the session. *out is
 * zeroed first, so og_chat_result_free may follow any return. */
OG_API og_status og_session_chat(og_session* session, const og_chat_request* req, const og_generate_options* opts,
                                 og_chat_result* out);

/* The same turn streamed: start, then next until *done, then finish (which
 * returns the whole result). Between start and finish only og_session_chat_*
 * and the cancel calls are accepted. */
OG_API og_status og_session_chat_start(og_session* session, const og_chat_request* req,
                                       const og_generate_options* opts);
/* A streamed call's piece: the first has id and name (arguments ""), later ones arguments only. */
typedef struct og_chat_call_delta {
  int32_t index;
  const char* id;
  const char* name;
  const char* arguments;
} og_chat_call_delta;
/* What became ready since the last call (each may be empty; a prefill chunk
 * gives nothing), owned by the session and valid until its next call. */
typedef struct og_chat_delta {
  const char* reasoning_content;
  size_t reasoning_len;
  const char* content;
  size_t content_len;
  const og_chat_call_delta* tool_calls;
  size_t n_tool_calls;
} og_chat_delta;
/* One step of og_session_stream_next (one prefill chunk, or up to a sampled token); *done: the turn ended. */
OG_API og_status og_session_chat_next(og_session* session, og_chat_delta* out, int* done);
/* Ends the streamed turn (not done counts as cancelled) and returns its result (out may be NULL). */
OG_API og_status og_session_chat_finish(og_session* session, og_chat_result* out);

/* ------------------------------------------------------ engine (scheduler) */

/* Many requests over one shared cache, continuous batching on a thread of its own. */
typedef struct og_engine og_engine;

typedef struct og_engine_options {
  size_t struct_size;         /* sizeof(og_engine_options), set by og_engine_options_init */
  int32_t max_sequences;      /* requests running at once (default 4) */
  int64_t max_session_tokens; /* prompt + max_new_tokens of one request (default 1024) */
  int64_t step_tokens;        /* rows per forward step (default 512) */
  int32_t max_queue;          /* requests waiting beyond max_sequences; 0 = unbounded */
  int32_t prefix_cache_entries; /* 0 = no shared prefix cache */
  const char* kv_kind;        /* "batched-sequence" (default) or "batched-cell" */
  const char* kv_dtype;       /* "f16" (default), "f32", ... */
  /* Speculative decoding by prompt lookup in every request (docs/speculative.md);
   * greedy replies are those of plain decoding, sampled ones keep their distribution. */
  int32_t spec_ngram_size;    /* 1-16: on, matching n-grams of this size down to spec_ngram_min; 0 = off (default) */
  int32_t spec_ngram_min;     /* 1 .. spec_ngram_size (default 1) */
  int32_t spec_draft_max;     /* most draft tokens per verify step, 1-256 (default 4) */
  int32_t spec_draft_min;     /* a shorter draft is not verified, 0 .. spec_draft_max (default 0) */
  /* Speculative decoding by a draft model instead (spec_ngram_size must then be 0): an open
   * model with the target's vocabulary (else OG_ERR_INVALID_ARGUMENT naming draft_model);
   * the engine keeps its weights alive as it keeps the target's, so the handle may be closed
   * after og_engine_new. It may be the target itself. Each request drafts greedily up to
   * spec_draft_max tokens in a cache of the draft's own (the engine's kv_kind and kv_dtype,
   * a sequence per max_sequences), stopping when the draft's top token's probability is
   * below spec_draft_p_min. NULL = no draft model (default). */
  og_model* draft_model;
  double spec_draft_p_min;    /* [0, 1] (default 0.75) */
} og_engine_options;
/* max_sequences 4, max_session_tokens 1024, step_tokens 512, max_queue 0, no prefix
 * cache, kv_kind "batched-sequence", kv_dtype "f16", no speculation (spec_ngram_size 0,
 * spec_ngram_min 1, spec_draft_max 4, spec_draft_min 0, draft_model NULL,
 * spec_draft_p_min 0.75) (and struct_size); NULL is ignored. */
OG_API void og_engine_options_init(og_engine_options* opts);

/* Starts an engine (its scheduler thread) over the model; opts may be NULL (defaults).
 * OG_ERR_INVALID_ARGUMENT for a bad option or a model that only embeds. */
OG_API og_status og_engine_new(og_model* model, const og_engine_options* opts, og_engine** out);
/* Cancels what is left (each request finishes as cancelled) and frees the engine. */
OG_API og_status og_engine_free(og_engine* engine);

/* Queues a request; its callbacks in opts are not used (stream it with og_engine_next).
 * *id > 0. A request that can never run is accepted and finishes as refused. */
OG_API og_status og_engine_submit(og_engine* engine, const int32_t* prompt, size_t n,
                                  const og_generate_options* opts, uint64_t* id);

typedef enum og_event_kind {
  OG_EVENT_NONE = 0,     /* the timeout passed with nothing new */
  OG_EVENT_TOKEN = 1,    /* a sampled token (token) */
  OG_EVENT_TEXT = 2,     /* a piece of text (text, len) */
  OG_EVENT_FINISHED = 3  /* the last event of the request (finish_reason, message) */
} og_event_kind;
typedef enum og_finish_reason {
  OG_FINISH_STOP = 0, OG_FINISH_LENGTH = 1, OG_FINISH_CANCELLED = 2, OG_FINISH_REFUSED = 3, OG_FINISH_FAILED = 4
} og_finish_reason;
typedef struct og_event {
  og_event_kind kind;
  int32_t token;
  const char* text; /* TEXT, and FINISHED's message ("" or why it was refused / failed); valid until the
                     * next og_engine_next on this request (FINISHED: this thread's next og_engine_next) */
  size_t len;
  og_finish_reason finish_reason;
  int64_t prompt_tokens, cached_tokens, generated_tokens; /* FINISHED */
} og_event;
/* Waits up to timeout_ms (< 0: forever) for the request's next event. After FINISHED
 * the id is forgotten (a later call is OG_ERR_INVALID_ARGUMENT). One reader per request. */
OG_API og_status og_engine_next(og_engine* engine, uint64_t id, int32_t timeout_ms, og_event* out);
/* Cancels a request (it then finishes as cancelled); unknown or finished ids are ignored. */
OG_API og_status og_engine_cancel(og_engine* engine, uint64_t id);
/* "stop", "length", "cancelled", "refused", "failed". */
OG_API const char* og_finish_reason_name(og_finish_reason reason);

/* A metrics snapshot (consistent; any thread). */
typedef struct og_engine_stats {
  int32_t waiting, running, peak_running;
  double kv_cache_usage; /* 0..1 */
  int64_t steps, rows, decode_rows;
  int64_t prompt_tokens, generated_tokens;
  int64_t prefix_lookups, prefix_hits, prefix_hit_tokens;
  int64_t cache_bytes_allocated, peak_cache_bytes;
  uint64_t finished, cancelled, refused, failed;
} og_engine_stats;
OG_API og_status og_engine_get_stats(og_engine* engine, og_engine_stats* out);

/* Speculative decoding's counters (vLLM's spec_decode ones), all zero without speculation.
 * An output struct that grows at the end: set struct_size to sizeof(og_spec_stats) before
 * the call; the library fills the first struct_size bytes (0 or more than its own size is
 * OG_ERR_INVALID_ARGUMENT). */
#define OG_SPEC_POSITIONS 8
typedef struct og_spec_stats {
  size_t struct_size;
  int64_t drafts;          /* verify steps (each carried a draft) */
  int64_t draft_tokens;    /* draft tokens they carried */
  int64_t accepted_tokens; /* of which accepted (<= draft_tokens) */
  int64_t pauses;          /* times a request's fallback rule paused its proposing */
  /* accepted_per_pos[i]: verify steps that accepted draft position i (i < OG_SPEC_POSITIONS);
   * accepted_beyond: those of later positions, so the sum of both is accepted_tokens. */
  int64_t accepted_per_pos[OG_SPEC_POSITIONS];
  int64_t accepted_beyond;
} og_spec_stats;
OG_API og_status og_engine_spec_stats(og_engine* engine, og_spec_stats* out);
/* A session's (og_session_options' speculation), counted since the session was created or
 * forked (pauses stays 0: a session has no fallback rule). */
OG_API og_status og_session_spec_stats(og_session* session, og_spec_stats* out);

#ifdef __cplusplus
}
#endif

#endif /* OFFGRAPH_H */
