// `offgraph tokenize` and `offgraph detokenize`: text <-> token ids with a
// model's tokenizer (GGUF file, vocabulary-only GGUF, HF directory, or a
// tokenizer.json / tokenizer.model file). Bad usage (UsageError) exits 2, a bad file 1.
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "commands.h"
#include "base/flags.h"
#include "shared_flags.h"
#include "runtime/token_ids.h"
#include "tokenizer/tokenizer.h"

namespace og::app {
namespace {

struct Options {
  std::string model, tokenizer;
  bool pieces = false, json = false, parse_special = false, no_bos = false, special = false;
  std::vector<std::string> positional;
};

void add_source_flags(Flags& f, Options& o) {
  add_model_flag(f, &o.model, "a .gguf file (vocabulary-only files too) or a Hugging Face directory");
  add_tokenizer_flag(f, &o.tokenizer);
}

void require_source(const Options& o) {
  if (o.model.empty() && o.tokenizer.empty()) usage_fail("--model is required (or --tokenizer)");
  // The same missing-path message and exit code as every command.
  if (!o.model.empty()) check_path_exists(o.model, "--model");
  if (!o.tokenizer.empty()) check_path_exists(o.tokenizer, "--tokenizer");
}

// All of stdin; one that cannot be read (a directory) is an error, not empty text.
std::string read_stdin() { return read_fd_to_end(0, "stdin"); }

std::unique_ptr<Tokenizer> load(const Options& o) {
  return Tokenizer::from_path(o.tokenizer.empty() ? o.model : o.tokenizer);
}

// A vocabulary piece made printable on one line: control characters and bytes
// that are not UTF-8 become escapes.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int run_tokenize(const Args& args) {
  Options o;
  Flags f = command_flags("tokenize",
          "--model M [flags] [TEXT...]\n\nPrints the token ids of TEXT (the arguments joined by single spaces;\n"
          "stdin, read verbatim, when no TEXT is given) on one line, separated by spaces.\n"
          "Text that starts with '-' goes after --.");
  add_source_flags(f, o);
  f.add_bool("pieces", &o.pieces, "one token per line: id, a tab, and its vocabulary piece");
  f.add_bool("json", &o.json, "one JSON object: {\"ids\": [...], \"pieces\": [...]}");
  f.add_bool("parse-special", &o.parse_special, "recognise special-token texts (e.g. <|eot_id|>) inside TEXT");
  f.add_bool("no-bos", &o.no_bos, "add no BOS/EOS (by default as the vocabulary says)");
  if (!f.parse(args, &o.positional)) {
    std::fputs(f.help().c_str(), stdout);
    return 0;
  }
  require_source(o);
  if (o.pieces && o.json) usage_fail("--pieces and --json do not combine (--json includes the pieces)");
  std::string text;
  if (o.positional.empty()) {
    text = read_stdin();
  } else {
    for (size_t i = 0; i < o.positional.size(); ++i) text += (i ? " " : "") + o.positional[i];
  }
  auto tok = load(o);
  std::vector<int32_t> ids = tok->encode(text, !o.no_bos, o.parse_special);
  std::string out;
  if (o.json) {
    nlohmann::json j;
    j["ids"] = ids;
    j["pieces"] = nlohmann::json::array();
    for (int32_t id : ids) j["pieces"].push_back(tok->piece(id));
    out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else if (o.pieces) {
    for (int32_t id : ids) out += std::to_string(id) + "\t" + printable(tok->piece(id)) + "\n";
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ' ';
      out += std::to_string(ids[i]);
    }
    out += "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// Splits ids on spaces, commas, newlines and brackets; returns an error message or "".
std::string parse_ids(const std::vector<std::string>& words, std::vector<int64_t>& ids) {
  for (const std::string& w : words) {
    std::string cur;
    auto finish = [&]() -> std::string {
      if (cur.empty()) return "";
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(cur.c_str(), &end, 10);
      // A negative or too large id is the vocabulary check's (runtime/token_ids.h).
      const size_t from = cur[0] == '-' && cur.size() > 1 ? 1 : 0;
      bool digits = cur.find_first_not_of("0123456789", from) == std::string::npos;
      if (!digits || *end != '\0') return "'" + cur + "' is not a token id (expected a non-negative integer)";
      if (errno == ERANGE) return "token id " + cur + " is out of range";
      ids.push_back(v);
      cur.clear();
      return "";
    };
    for (char c : w) {
      if (c == ' ' || c == ',' || c == '\n' || c == '\t' || c == '\r' || c == '[' || c == ']') {
        if (std::string e = finish(); !e.empty()) return e;
      } else {
        cur += c;
      }
    }
    if (std::string e = finish(); !e.empty()) return e;
  }
  return "";
}

int run_detokenize(const Args& args) {
  Options o;
  Flags f = command_flags("detokenize",
          "--model M [flags] [ID...]\n\nPrints the text of the token ids, then a newline. Without ids they are\n"
          "read from stdin, separated by spaces, commas or newlines, optionally inside [ ].");
  add_source_flags(f, o);
  f.add_bool("special", &o.special, "keep special/control tokens (e.g. <s>) in the text");
  for (size_t i = 1; i < args.size(); ++i) {  // "-5" is a bad id, not an unknown flag
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() > 1 && a[0] == '-' && a.find_first_not_of("0123456789", 1) == std::string::npos)
      usage_fail("token id " + a + " is negative");
  }
  if (!f.parse(args, &o.positional)) {
    std::fputs(f.help().c_str(), stdout);
    return 0;
  }
  require_source(o);
  std::vector<int64_t> raw;
  std::vector<std::string> words = o.positional;
  bool from_stdin = words.empty();
  if (from_stdin) words.push_back(read_stdin());
  std::string err = parse_ids(words, raw);
  if (!err.empty()) usage_fail((from_stdin ? "stdin: " : "") + err);
  auto tok = load(o);
  if (const auto bad = first_bad_token_id(raw, tok->n_vocab())) usage_fail(bad->message);
  const std::vector<int32_t> ids(raw.begin(), raw.end());
  std::string text = tok->decode(ids, !o.special) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

int cmd_tokenize(const Args& args) { return run_tokenize(args); }
int cmd_detokenize(const Args& args) { return run_detokenize(args); }

}  // namespace og::app
