// `offgraph run`: one prompt, one generation. The generated text streams to
// stdout (the prompt is not echoed, as in llama.cpp); the cache description,
// fill and memory lines and the report go to stderr.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "chat/chat_request.h"
#include "commands.h"
#include "base/flags.h"
#include "image_files.h"
#include "llm_common.h"
#include "model/config.h"
#include "runtime/engine.h"
#include "runtime/prompt_room.h"
#include "spec_flags.h"

namespace og::app {

int run_chat(const LlmFlags& f, const SpecFlags& spec);  // cmd_chat.cpp

namespace {

// The prompt: the system and user messages as one og::ChatRequest, rendered
// by render_chat (chat/chat_request.h), as the server and the library render
// the same request. --image files are image parts before the user's text (as
// llama.cpp's mtmd-cli places them), at the template's image markers.
ImagePrompt prompt_of(const LlmFlags& f, const LoadedModel& l, const std::vector<std::string>& images,
                      ImageCache& cache) {
  ChatRequest req;
  auto message = [](const char* role, const std::string& text) {
    ChatRequestMessage m;
    m.role = role;
    m.content = text;
    return m;
  };
  if (!f.system.empty()) req.messages.push_back(message("system", f.system));
  req.messages.push_back(message("user", f.prompt));
  if (!images.empty()) {
    ChatRequestMessage& user = req.messages.back();
    for (const std::string& bytes : images) user.parts.push_back(ChatContentPart::of_image(bytes));
    user.parts.push_back(ChatContentPart::of_text(*user.content));
    user.content.reset();
  }
  const ChatRenderForms forms = render_forms(req);
  ChatPlanInput in;
  in.messages = &forms.messages;
  in.template_request = &forms.template_request;
  in.needs_jinja = forms.needs_jinja;
  const ModelChat chat = chat_setup_of(l);  // the setup chat, batch, serve and the C API render with
  ChatSegments segments;
  try {
    segments = render_chat(in, chat.setup);
  } catch (const ChatRequestError& e) {
    if (images.empty()) throw;
    fail("--image: ", e.what());
  }
  ImagePrompt p;
  if (images.empty()) {
    p.tokens = encode_chat(*l.tok, segments, true);
    return p;
  }
  try {
    return image_prompt_of(segments, *l.tok, *l.vision, encode_chat_images(req, l.vision.get(), &cache));
  } catch (const Error& e) {
    fail("--image: ", e.what());
  }
}

// What the turn takes as its prompt: the ids, or, with images, nothing (the
// prompt is appended to the session pending, each image whole, and the turn
// prefills it).
std::span<const int32_t> start_prompt(Session& s, const ImagePrompt& p, const LoadedModel& l) {
  if (p.images.empty()) return p.tokens;
  append_image_prompt(s, p, 0, l.model->config().d_model);
  return {};
}

// Streams a piece; a failed write ends the generation with an error.
void write_stdout(std::string_view piece) {
  if (std::fwrite(piece.data(), 1, piece.size(), stdout) != piece.size() || std::fflush(stdout) != 0)
    fail("cannot write the output to stdout: ", std::strerror(errno));
}

}  // namespace

int cmd_run(const Args& args) {
  LlmFlags f;
  SpecFlags sf;
  Flags fl = command_flags("run", "--model M --prompt P [options]");
  add_llm_flags(fl, f, /*run=*/true);
  std::vector<std::string> image_files;
  fl.add_repeated("image", &image_files,
                  "an image file (PNG, JPEG, WebP or GIF's first frame, told by its bytes; at most 32 MiB) for a "
                  "model with a vision tower (--mmproj, or an HF directory's own); repeatable; the images go before "
                  "the prompt's text in the user message, where the chat template puts images",
                  "FILE");
  add_spec_flags(fl, sf);
  if (!fl.parse(args)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_llm_flags(fl, f, /*run=*/true);
  check_spec_flags(fl, sf);
  if (f.interactive && !image_files.empty())
    usage_fail("--image cannot be combined with --interactive (attach images with /image FILE in the chat)");
  if (f.interactive) return run_chat(f, sf);

  const Run run = build_llm_run(f.run);
  const LoadedModel& l = run.loaded;
  const std::unique_ptr<SpecRun> spec = make_spec_run(sf, run);  // a bad draft fails before any report
  ImageCache image_cache;
  const std::vector<std::string> images = load_images(image_files, l, image_cache, "--image");
  const ImagePrompt prompt = prompt_of(f, l, images, image_cache);
  // The rule every edge applies (runtime/prompt_room.h): room for the prompt and one generated token.
  if (const std::string e =
          prompt_room_error(0, static_cast<int64_t>(prompt.tokens.size()), run.policy.max_capacity);
      !e.empty())
    usage_fail(e + " (raise --kv-max-capacity)");

  ModelEngine engine(*l.model);
  Session session(engine, run.make_cache(), *l.tok);
  print_cache_describe(session.cache());
  print_fill("after load", session);
  const SamplerConfig sc = sampler_config_of(f.sampling);
  if (sc.temperature > 0 && f.sampling.seed < 0) diag("[sampler] seed %llu\n", static_cast<unsigned long long>(sc.seed));
  GenerateOptions opts = generate_options_of(f, l);
  if (spec) {
    diag("%s\n", spec->describe().c_str());
    opts.spec = spec->options();
  }
  if (f.warmup) {
    Sampler warm(sc);
    session.generate(start_prompt(session, prompt, l), warm, opts, nullptr);
    session.reset();
    session.stats() = Stats{};
  }
  session.stats().load_s = l.load_s;
  opts.on_prefilled = [&] { print_fill("after prefill", session); };
  Sampler sampler(sc);
  install_interrupt_handler(/*restart_reads=*/true);
  const TurnResult r = session.generate(start_prompt(session, prompt, l), sampler, opts, write_stdout);
  // On a terminal the text ends its line before the reports on stderr; a pipe
  // or file receives exactly the generated text.
  // The JSON report (--stats json) is a line of its own after the text.
  const bool json_line = f.stats == "json" && f.stats_file.empty();
  if ((json_line || isatty(STDOUT_FILENO)) && !r.text.empty() && r.text.back() != '\n') write_stdout("\n");
  if (r.reason == StopReason::kCapacity)
    std::fprintf(stderr, "[generation stopped: the cache is full at %lld/%lld positions; raise --kv-max-capacity]\n",
                 static_cast<long long>(session.cached()), static_cast<long long>(session.capacity()));
  if (r.reason == StopReason::kInterrupted) std::fputs("[interrupted]\n", stderr);
  print_fill("after decode", session);
  if (const std::string line = spec_report_line(session.stats()); !line.empty()) diag("%s", line.c_str());
  print_report(f, session, stop_reason_name(r.reason));
  return r.reason == StopReason::kInterrupted ? interrupted_exit_code() : 0;
}

}  // namespace og::app
