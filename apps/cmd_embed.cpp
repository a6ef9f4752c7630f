// `offgraph embed`: sentence embeddings of texts with an embedding model
// (Qwen3-Embedding, EmbeddingGemma, any file declaring a pooling type). One
// input per positional argument, else one per line of --file or of stdin.
// Output: OpenAI's list shape as JSON (server/embeddings.h builds it), or
// plain floats, one vector per line. Bad usage exits 2, a bad file or input 1.
// SIGINT / SIGTERM (as run and batch handle them) stop it while it reads
// stdin, after the model loads or before the next forward pass: one line
// "[interrupted]" on stderr, no output, exit 130 / 143.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/flags.h"
#include "base/mapped_file.h"
#include "commands.h"
#include "llm_common.h"
#include "runtime/embedder.h"
#include "runtime/run_builder.h"
#include "server/embeddings.h"
#include "shared_flags.h"

namespace og::app {
namespace {

struct Options {
  RunConfig run;
  std::string file, format = "json";
  int64_t normalize = 2, dimensions = 0, batch_rows = 0;
  std::vector<std::string> positional;
};

// One input per line; a final newline ends the last line; an empty line is an error.
std::vector<std::string> split_lines(const std::string& text, const std::string& from) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) fail(from, ": line ", out.size() + 1, " is empty (one input per line)");
    out.push_back(std::move(line));
    start = end + 1;
  }
  if (out.empty()) fail(from, ": no input to embed");
  return out;
}

// stdin to its end; nullopt when a SIGINT / SIGTERM came first (the wait
// polls, so a terminal or a pipe that sends nothing cannot hold the signal off).
std::optional<std::string> read_stdin_or_interrupt() {
  check_fd_readable(0, "stdin");
  std::string out;
  char buf[1 << 16];
  while (true) {
    if (interrupted()) return std::nullopt;
    pollfd p{0, POLLIN, 0};
    const int r = ::poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) fail("stdin: cannot read: ", std::strerror(errno));
    if (r <= 0) continue;
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n == 0) return out;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail("stdin: cannot read: ", std::strerror(errno));
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

int interrupted_exit() {
  std::fputs("[interrupted]\n", stderr);
  return interrupted_exit_code();
}

// The model's name for the JSON body: the file or directory name.
std::string model_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void print_plain(const EmbedResult& r) {
  std::string out;
  char buf[32];
  for (const std::vector<float>& v : r.vectors) {
    for (size_t i = 0; i < v.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v[i]));
      out += buf;
      // Pooling none: one line per token.
      out += (i + 1) % static_cast<size_t>(r.dim) == 0 ? '\n' : ' ';
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

int cmd_embed(const Args& args) {
  Options o;
  Flags fl = command_flags("embed",
      "--model M [flags] [TEXT...]\n\nPrints the embedding of each TEXT argument; without TEXT, of each line of\n"
      "--file or of stdin. The model must declare a pooling type (an embedding model).");
  add_model_flag(fl, &o.run.model.model);
  add_tokenizer_flag(fl, &o.run.model.tokenizer);
  add_mmap_flag(fl, &o.run.model.mmap, &o.run.model.experts_in_memory);
  add_threads_flag(fl, &o.run.threads);
  fl.add_string("file", &o.file, "read the inputs from FILE, one per line", "FILE");
  fl.add_choice("output-format", &o.format, {"json", "plain"},
                "json: OpenAI's embeddings list (data[i].embedding, usage); plain: one vector per line");
  fl.add_int("embd-normalize", &o.normalize, -1, 1 << 20,
             "normalisation as llama.cpp's: -1 none, 0 max-abs (int16 range), 1 taxicab, 2 euclidean (default), "
             "p > 2 p-norm");
  fl.add_int("dimensions", &o.dimensions, 1, 1 << 24,
             "keep the first N values of each vector (Matryoshka), then normalise; default: all");
  fl.add_int("batch-rows", &o.batch_rows, 1, 1 << 20, "most tokens one forward pass holds (default max(ctx, 512), "
             "at most 8192); inputs are packed many to a pass");
  if (!fl.parse(args, &o.positional)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_model_given(o.run.model.model);
  if (!o.file.empty() && !o.positional.empty()) usage_fail("give the inputs as TEXT arguments or --file, not both");
  check_model_paths(o.run.model);
  if (!o.file.empty()) check_path_exists(o.file, "--file");
  install_interrupt_handler(/*restart_reads=*/true);
  std::vector<std::string> texts = o.positional;
  if (!o.file.empty()) {
    texts = split_lines(read_text_file(o.file), o.file);
  } else if (texts.empty()) {
    const std::optional<std::string> in = read_stdin_or_interrupt();
    if (!in) return interrupted_exit();
    texts = split_lines(*in, "stdin");
  }
  for (size_t i = 0; i < texts.size(); ++i)
    if (texts[i].empty()) fail("input ", i, " is empty");

  o.run.model.chat = "0";  // no chat template is needed
  const Run run = build_run(o.run);
  if (interrupted()) return interrupted_exit();  // during the load
  if (const std::string why = embedding_refusal(run.model()); !why.empty()) fail(why);
  const Embedder embedder(run.model());
  EmbedOptions eo;
  eo.normalize = static_cast<int>(o.normalize);
  eo.dimensions = o.dimensions;
  eo.batch_rows = o.batch_rows;
  eo.interrupt = &interrupted();
  OG_CHECK(o.dimensions <= embedder.dim(), "--dimensions ", o.dimensions, " is more than the model's embedding width ",
           embedder.dim());
  std::vector<std::vector<int32_t>> inputs;
  for (const std::string& t : texts) inputs.push_back(run.tokenizer().encode(t, true, false));
  const EmbedResult r = embedder.embed(inputs, eo);
  if (r.interrupted) return interrupted_exit();
  diag("[embed] %zu input(s), %lld tokens, %lld forward pass(es), %lld values each\n", texts.size(),
       static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.forward_passes),
       static_cast<long long>(r.dim));
  if (o.format == "plain") {
    print_plain(r);
  } else {
    const std::string body = server::embeddings_body(r, model_name(o.run.model.model), false)
                                 .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    std::fwrite(body.data(), 1, body.size(), stdout);
    std::fputc('\n', stdout);
  }
  return 0;
}

}  // namespace og::app
