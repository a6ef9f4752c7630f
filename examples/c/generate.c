/* A minimal C program over liboffgraph: greedy generation, streamed.
 * Build: cc generate.c $(pkg-config --cflags --libs offgraph) -o generate
 * Run:   ./generate MODEL.gguf ["prompt"] */
#include <offgraph/offgraph.h>
#include <stdio.h>
#include <string.h>

static int print_piece(void* user_data, const char* text, size_t len) {
  (void)user_data;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0; /* nonzero would cancel */
}

static int fail(const char* what, og_status s) {
  fprintf(stderr, "%s: %s (%s)\n", what, og_last_error(), og_status_name(s));
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL [PROMPT]\n", argv[0]);
    return 2;
  }
  const char* prompt = argc > 2 ? argv[2] : "Once upon a time";
  og_model* model = NULL;
  og_status s = og_model_open(argv[1], NULL, &model);
  if (s != OG_OK) return fail("open", s);

  og_tokens ids = {0};
  s = og_tokenize(model, prompt, strlen(prompt), 1, 0, &ids);
  if (s != OG_OK) return fail("tokenize", s);

  og_session* session = NULL;
  s = og_session_new(model, NULL, &session);
  if (s != OG_OK) return fail("session", s);

  og_generate_options opts;
  og_generate_options_init(&opts);
  opts.max_new_tokens = 60;
  opts.on_text = print_piece;
  og_generation gen = {0};
  fputs(prompt, stdout);
  s = og_session_generate(session, ids.ids, ids.n, &opts, &gen);
  if (s != OG_OK) return fail("generate", s);
  printf("\n");
  fprintf(stderr, "[%zu tokens, stopped by %s; liboffgraph %s]\n", gen.tokens.n,
          og_stop_reason_name(gen.stop_reason), og_version());

  /* Bad use is a status and a message, never a crash. */
  const int32_t bad = 100000;
  if (og_session_prefill(session, &bad, 1, 0) != OG_ERR_OUT_OF_RANGE) return 1;
  fprintf(stderr, "[expected error: %s]\n", og_last_error());

  og_generation_free(&gen);
  og_tokens_free(&ids);
  og_session_free(session);
  og_model_close(model);
  return 0;
}
