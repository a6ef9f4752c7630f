// `offgraph chat` (and `run --interactive`): multi-turn chat on stdin, a
// terminal or a pipe. The conversation is one og::ChatRequest (the system
// message, every turn so far, the new user turn), rendered whole each turn
// through runtime/chat_turn.h as the library's og_session_chat renders it:
// the session keeps the prefix of its history the render shares and
// prefills the rest. Replies stream to stdout, one line each; everything
// else ([P/CAP tokens], notes, /stats) goes to stderr.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "base/flags.h"
#include "image_files.h"
#include "llm_common.h"
#include "model/config.h"
#include "runtime/chat_images.h"
#include "runtime/chat_turn.h"
#include "runtime/prompt_room.h"
#include "runtime/engine.h"
#include "spec_flags.h"

namespace og::app {

namespace {

constexpr const char* kChatHelp =
    "[commands: /reset  start over | /undo  back to the start of the last turn | /undo N  drop the last N "
    "tokens | /image FILE  attach an image to the next turn (a model with a vision tower) | /stats  the report | "
    "/help  this text | /quit  leave | Ctrl-C stops a reply; at the prompt, Ctrl-C or Ctrl-D leaves]\n";

// Lines of stdin read with poll() + read(), so that a Ctrl-C while waiting
// for a line is seen within a tenth of a second whatever the timing.
class LineReader {
 public:
  enum class Got { kLine, kEnd, kInterrupted };
  Got next(std::string* line) {
    while (true) {
      const size_t nl = buf_.find('\n', scanned_);
      if (nl != std::string::npos) {
        line->assign(buf_, 0, nl);
        buf_.erase(0, nl + 1);
        scanned_ = 0;
        return Got::kLine;
      }
      scanned_ = buf_.size();  // a long line is scanned once, not once per chunk
      // Before end of input: a Ctrl-C and a closed stdin may arrive together.
      if (interrupted()) return Got::kInterrupted;
      if (eof_) {
        if (buf_.empty()) return Got::kEnd;
        line->swap(buf_);
        buf_.clear();
        scanned_ = 0;
        return Got::kLine;
      }
      pollfd p{STDIN_FILENO, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;  // timeout or EINTR: check the flag again
      char chunk[1 << 16];
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("stdin: cannot read: ", std::strerror(errno));
      if (n == 0) eof_ = true;
      buf_.append(chunk, static_cast<size_t>(n > 0 ? n : 0));
    }
  }

 private:
  std::string buf_;
  size_t scanned_ = 0;  // buf_[0, scanned_) holds no newline
  bool eof_ = false;
};

// Where a turn began, so /undo can restore the conversation exactly.
struct TurnMark {
  int64_t start = 0;        // history the turn kept (its render's prefix shared with the history before it)
  int64_t reply_start = 0;  // history length before the reply
  size_t n_messages = 0;    // messages before the turn
  // How its reply reads back into the conversation (the turn's plan: its
  // reply parser options, and whether the reply's text keeps control tokens).
  ReplyParserOptions reply = {};
  bool special_text = false;
};

ChatRequestMessage message(const char* role, std::string text) {
  ChatRequestMessage m;
  m.role = role;
  m.content = std::move(text);
  return m;
}

class Chat {
 public:
  Chat(const LlmFlags& f, const LoadedModel& l, Session& s, const SpecOptions& spec)
      : f_(f), l_(l), s_(s), chat_(chat_setup_of(l)), sampler_(sampler_config_of(f.sampling)) {
    opts_ = generate_options_of(f, l);
    opts_.spec = spec;
    if (!f.system.empty()) messages_.push_back(message("system", f.system));
    base_messages_ = messages_.size();
    for (int32_t id = 0; id < l.tok->n_vocab(); ++id)
      max_token_bytes_ = std::max(max_token_bytes_, l.tok->token_bytes(id).size());
  }

  int turns() const { return turns_; }
  int failed_turns() const { return failed_; }
  // The last turn's stop reason, null before any turn.
  const char* last_stop_reason() const { return last_reason_ ? stop_reason_name(*last_reason_) : nullptr; }

  // Returns false on /quit.
  bool handle(const std::string& line) {
    // Blank lines (spaces included) are skipped, never sent as a turn.
    if (line.find_first_not_of(" \t\r\n\f\v") == std::string::npos) return true;
    if (line[0] != '/') {
      ++turns_;
      try {
        if (!turn(line)) ++failed_;
      } catch (const Error& e) {
        // The session rolled back; the conversation goes on.
        ++failed_;
        std::fprintf(stderr, "[error: %s]\n", e.what());
      }
      return true;
    }
    if (line == "/quit" || line == "/exit") return false;
    if (line == "/help") std::fputs(kChatHelp, stderr);
    else if (line == "/reset") reset();
    else if (line == "/stats") print_report_asked(f_, s_, last_stop_reason());
    else if (line == "/undo") undo_turn();
    else if (line.rfind("/undo ", 0) == 0) undo_tokens(line.substr(6));
    else if (line == "/image" || line.rfind("/image ", 0) == 0) attach_image(line.substr(6));
    else std::fprintf(stderr, "[unknown command %s; /help lists the commands]\n", line.c_str());
    return true;
  }

 private:
  // Tokens of the conversation (a reply cut by the capacity leaves its final
  // token pending beyond the cache: counted as the full cache).
  int64_t used() const { return std::min(s_.position(), s_.capacity()); }

  void fill_line() {
    diag("[%lld/%lld tokens]\n", static_cast<long long>(used()), static_cast<long long>(s_.capacity()));
  }

  // A turn of `need` positions (its prompt and one generated token,
  // runtime/prompt_room.h) that does not fit now. /undo and /reset help only
  // when the turn alone (after the system message) fits the cache.
  void refuse_turn(int64_t need, bool at_least, int64_t fresh_need) {
    const char* more = at_least ? "at least " : "";
    if (fresh_need > s_.capacity())
      std::fprintf(stderr,
                   "[turn too long: it needs %s%lld positions but the cache holds %lld, even after /reset; raise "
                   "--kv-max-capacity]\n",
                   more, static_cast<long long>(fresh_need), static_cast<long long>(s_.capacity()));
    else
      std::fprintf(stderr, "[cache full: %lld/%lld tokens used, this turn needs %s%lld more; /undo or /reset makes room]\n",
                   static_cast<long long>(used()), static_cast<long long>(s_.capacity()), more,
                   static_cast<long long>(need));
  }

  // Returns false when the turn was refused (it does not fit).
  bool turn(const std::string& text) {
    // Every token covers at most max_token_bytes_ bytes, so a line too long for
    // the cache is known before it is tokenized (a 10 MB paste costs nothing).
    const int64_t at_least = static_cast<int64_t>(text.size() / max_token_bytes_);
    if (!prompt_leaves_room(used(), at_least, s_.capacity())) {
      refuse_turn(at_least + 1, true, at_least + 1);
      return false;
    }
    ChatRequest next;
    next.messages = messages_;
    next.messages.push_back(user_message(text));
    // The whole conversation, and what the history already holds of it (the
    // images of earlier turns come from the cache, not the tower again).
    const ImageChatTurn it = plan_image_chat_turn(next, chat_.setup, *l_.tok, s_, l_.vision.get(), &images_);
    const ChatTurnPrompt& p = it.turn;
    const int64_t total = static_cast<int64_t>(p.ids.size());
    // The server's and the library's rule: the prompt leaves room for a generated token.
    if (!prompt_leaves_room(0, total, s_.capacity())) {
      ChatRequest fresh;
      fresh.messages.assign(messages_.begin(), messages_.begin() + static_cast<long>(base_messages_));
      fresh.messages.push_back(user_message(text));
      const int64_t fresh_need = static_cast<int64_t>(
          plan_image_chat_turn(fresh, chat_.setup, *l_.tok, s_, l_.vision.get(), &images_).turn.ids.size());
      refuse_turn(total - p.keep + 1, false, fresh_need + 1);
      return false;
    }
    const RewindResult rr = keep_shared_prefix(s_, p);
    // A turn that rewinds into earlier turns (their render changed) moves their marks with it.
    for (TurnMark& m : marks_) {
      m.start = std::min(m.start, p.keep);
      m.reply_start = std::min(m.reply_start, p.keep);
    }
    // One token is the last reply's stop id when the template renders another
    // closing text (or none: raw text ends on EOS): no news, so not reported.
    if (rr.removed > 1)
      diag("[the history renders differently now: %lld tokens taken back and prefilled again]\n",
           static_cast<long long>(rr.removed));
    report_rewind(rr);
    TurnMark mark{p.keep, 0, messages_.size(), p.plan.reply, p.plan.special_text};
    // With images the prompt's rest goes in pending, each image whole, and the turn prefills it.
    std::span<const int32_t> added = p.added();
    if (!it.prompt.images.empty()) {
      append_image_prompt(s_, it.prompt, p.keep, l_.model->config().d_model);
      added = {};
    }
    // A failed write is reported when the command ends (main checks stdout).
    TurnResult r;
    try {
      r = s_.generate(added, sampler_, opts_, [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      });
    } catch (...) {
      if (!it.prompt.images.empty()) s_.rewind_to(p.keep);  // the pending prompt goes too
      throw;
    }
    attached_.clear();
    images_.keep_only(chat_images(next));  // the conversation's images (an /undo drops theirs later)
    std::fputc('\n', stdout);
    std::fflush(stdout);
    last_reason_ = r.reason;
    mark.reply_start = s_.position() - static_cast<int64_t>(r.tokens.size());
    marks_.push_back(mark);
    messages_ = std::move(next.messages);
    std::vector<int32_t> reply_ids = r.tokens;
    if (r.reason == StopReason::kStopToken && !reply_ids.empty()) reply_ids.pop_back();  // the stop id is no text
    messages_.push_back(reply_message(mark, reply_ids, r.text, r.reason == StopReason::kStopString ? r.stop_string : ""));
    if (r.reason == StopReason::kCapacity)
      std::fprintf(stderr, "[reply cut: the cache is full at %lld/%lld tokens; /undo or /reset]\n",
                   static_cast<long long>(s_.cached()), static_cast<long long>(s_.capacity()));
    if (r.reason == StopReason::kInterrupted && stop_signal() == SIGTERM) return true;  // the loop leaves
    if (r.reason == StopReason::kInterrupted) {
      // Back to the prompt: the next Ctrl-C there (or Ctrl-D) leaves.
      interrupted() = false;
      std::fputs("[interrupted: the reply so far is kept; Ctrl-C again or Ctrl-D to leave]\n", stderr);
    }
    fill_line();
    return true;
  }

  // A reply as the conversation keeps it: what the format's reply parser reads
  // from it (chat/reply_parser.h, as the server and og_session_chat split a
  // reply), the content a server client sends back, not the text shown,
  // which drops control tokens (harmony's "<|channel|>final<|message|>Yes."
  // shows as "finalYes."). The reasoning goes along where the template reads
  // request fields; it decides whether to render it. `ids` are the reply's
  // tokens without a stop id, `shown` their text as streamed, `stop` the stop
  // string that ended it ("" = none).
  ChatRequestMessage reply_message(const TurnMark& m, const std::vector<int32_t>& ids, const std::string& shown,
                                   const std::string& stop) const {
    std::string text = shown;
    if (m.special_text) {
      text = l_.tok->decode(ids, /*skip_special=*/false);
      if (!stop.empty()) text.resize(std::min(text.size(), text.find(stop)));
    }
    const ParsedReply parsed = parse_reply(text, m.reply);
    ChatRequestMessage reply = message("assistant", parsed.content);
    if (!parsed.reasoning.empty() && chat_.setup.format->renders_requests()) reply.reasoning_content = parsed.reasoning;
    return reply;
  }

  // The user's turn: its text, after the images attached to it (where
  // llama.cpp's mtmd-cli puts images; the template places them).
  ChatRequestMessage user_message(const std::string& text) const {
    if (attached_.empty()) return message("user", text);
    ChatRequestMessage m;
    m.role = "user";
    for (const std::string& bytes : attached_) m.parts.push_back(ChatContentPart::of_image(bytes));
    m.parts.push_back(ChatContentPart::of_text(text));
    return m;
  }

  // /image FILE: read and encoded now (a bad file is one line, the chat goes on).
  void attach_image(const std::string& arg) {
    const size_t b = arg.find_first_not_of(" \t"), e = arg.find_last_not_of(" \t\r");
    if (b == std::string::npos) {
      std::fputs("[/image needs a file: /image FILE]\n", stderr);
      return;
    }
    const std::string path = arg.substr(b, e - b + 1);
    try {
      std::vector<std::string> bytes = load_images({path}, l_, images_, "/image");
      attached_.push_back(std::move(bytes[0]));
    } catch (const Error& err) {
      std::fprintf(stderr, "[error: %s]\n", err.what());
      return;
    }
    std::fprintf(stderr, "[image %s attached to the next turn (%zu attached)]\n", path.c_str(), attached_.size());
  }

  void reset() {
    s_.reset();
    messages_.resize(base_messages_);
    marks_.clear();
    attached_.clear();
    std::fputs("[reset]\n", stderr);
    fill_line();
  }

  void report_rewind(const RewindResult& rr) {
    if (rr.recomputed)
      std::fprintf(stderr,
                   "[undo: a ring layer no longer holds positions before %lld; recomputed %lld tokens from the "
                   "token history]\n",
                   static_cast<long long>(rr.history_begin), static_cast<long long>(rr.recomputed_tokens));
  }

  void undo_turn() {
    if (marks_.empty()) {
      std::fputs("[nothing to undo]\n", stderr);
      return;
    }
    const TurnMark m = marks_.back();
    marks_.pop_back();
    const RewindResult rr = s_.rewind_to(m.start);
    messages_.resize(m.n_messages);
    std::fprintf(stderr, "[undo: removed the last turn, %lld tokens]\n", static_cast<long long>(rr.removed));
    report_rewind(rr);
    fill_line();
  }

  void undo_tokens(const std::string& arg) {
    int64_t n = 0;
    size_t used = 0;
    try {
      n = std::stoll(arg, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != arg.size() || n < 1) {
      std::fprintf(stderr, "[/undo N needs a whole number N >= 1, got '%s']\n", arg.c_str());
      return;
    }
    if (n > s_.position()) {
      std::fprintf(stderr, "[cannot undo %lld tokens: the history holds %lld]\n", static_cast<long long>(n),
                   static_cast<long long>(s_.position()));
      return;
    }
    const int64_t keep = s_.position() - n;
    for (const SessionImage& im : s_.images())
      if (im.span.begin < keep && keep < im.span.end()) {
        std::fprintf(stderr, "[cannot undo %lld tokens: that cuts an image; /undo %lld or /undo %lld]\n",
                     static_cast<long long>(n), static_cast<long long>(s_.position() - im.span.end()),
                     static_cast<long long>(s_.position() - im.span.begin));
        return;
      }
    int64_t end = s_.position();  // where the last remaining turn ends
    const RewindResult rr = s_.rewind_to(keep);
    // Whole turns at or after the cut are forgotten; a turn cut inside keeps
    // what is left of it as an unfinished reply.
    while (!marks_.empty() && marks_.back().start >= keep) {
      const TurnMark m = marks_.back();
      marks_.pop_back();
      messages_.resize(m.n_messages);
      end = m.start;
    }
    if (!marks_.empty() && keep < end) {
      const TurnMark& m = marks_.back();
      std::vector<int32_t> ids;
      if (keep > m.reply_start) ids.assign(s_.history().begin() + m.reply_start, s_.history().begin() + keep);
      messages_.back() = reply_message(m, ids, l_.tok->decode(ids), "");
    }
    std::fprintf(stderr, "[undo: removed %lld tokens]\n", static_cast<long long>(rr.removed));
    report_rewind(rr);
    fill_line();
  }

  const LlmFlags& f_;
  const LoadedModel& l_;
  Session& s_;
  const ModelChat chat_;  // the model's chat setup (runtime/model_chat.h), as the server's
  Sampler sampler_;
  GenerateOptions opts_;
  std::vector<ChatRequestMessage> messages_;  // the conversation so far (system first, when given)
  size_t base_messages_ = 0;
  std::vector<TurnMark> marks_;
  ImageCache images_;                   // the conversation's images, encoded once
  std::vector<std::string> attached_;   // /image files for the next turn (their bytes)
  size_t max_token_bytes_ = 1;  // the longest token's bytes (at least 1)
  int turns_ = 0, failed_ = 0;  // turns asked for, and those refused or failed
  std::optional<StopReason> last_reason_;
};

}  // namespace

int run_chat(const LlmFlags& f, const SpecFlags& sf) {
  check_fd_readable(STDIN_FILENO, "stdin");  // a directory would read as an empty conversation
  const Run run = build_llm_run(f.run);
  const LoadedModel& l = run.loaded;
  const std::unique_ptr<SpecRun> spec = make_spec_run(sf, run);  // a bad draft fails before any report
  ModelEngine engine(*l.model);
  Session session(engine, run.make_cache(), *l.tok);
  session.stats().load_s = l.load_s;
  print_cache_describe(session.cache());
  print_fill("after load", session);
  diag("[chat template: %s]\n", l.tmpl->describe().c_str());
  if (spec) diag("%s\n", spec->describe().c_str());
  const bool tty = isatty(STDIN_FILENO);
  if (tty && verbosity() != Verbosity::kQuiet) std::fputs(kChatHelp, stderr);
  Chat chat(f, l, session, spec ? spec->options() : SpecOptions{});
  install_interrupt_handler(/*restart_reads=*/true);
  LineReader in;
  std::string line;
  bool by_interrupt = false;
  while (true) {
    if (tty) std::fputs("> ", stderr);
    const LineReader::Got got = in.next(&line);
    if (got == LineReader::Got::kInterrupted) {
      by_interrupt = true;
      break;
    }
    if (got == LineReader::Got::kEnd) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!chat.handle(line)) break;
    if (stop_signal() == SIGTERM && interrupted()) {  // SIGTERM ends the conversation after the turn
      by_interrupt = true;
      break;
    }
  }
  if (by_interrupt) std::fputs("\n[interrupted]\n", stderr);
  if (const std::string line = spec_report_line(session.stats()); !line.empty()) diag("%s", line.c_str());
  print_report(f, session, chat.last_stop_reason());
  if (by_interrupt) return interrupted_exit_code();
  if (chat.turns() > 0 && chat.failed_turns() == chat.turns())
    fail("every turn failed (", chat.turns(), " of ", chat.turns(), "); see the messages above");
  return 0;
}

int cmd_chat(const Args& args) {
  LlmFlags f;
  SpecFlags sf;
  Flags fl = command_flags("chat", "--model M [options]   (turns on stdin; /help inside lists the commands)");
  add_llm_flags(fl, f, /*run=*/false);
  add_spec_flags(fl, sf);
  if (!fl.parse(args)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_llm_flags(fl, f, /*run=*/false);
  check_spec_flags(fl, sf);
  return run_chat(f, sf);
}

}  // namespace og::app
