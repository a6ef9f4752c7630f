// The one flag parser of the offgraph commands and of the developer tools
// (og-synth, bench/): `--flag value` and
// `--flag=value`, underscore spellings as aliases (--max_new_tokens ==
// --max-new-tokens), typed values checked against their range, repeatable
// flags, unknown flags rejected with a suggestion, and --help listing every
// flag with its default. Bad usage throws UsageError (exit code 2).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"

namespace og {

// A command's arguments; args[0] is the command's own name.
using Args = std::vector<std::string>;

// Bad usage: main() prints it as one line and exits with code 2.
class UsageError : public og::Error {
 public:
  using og::Error::Error;
};

class Flags {
 public:
  // command: e.g. "run"; synopsis: the usage line after "offgraph run";
  // program: what the usage line starts with (a tool passes its own name and an
  // empty command).
  Flags(std::string command, std::string synopsis, std::string program = "offgraph");

  // Registration. `name` is spelled with dashes and without them leading
  // ("max-new-tokens"); the current value of *out is the default shown by --help.
  void add_string(const std::string& name, std::string* out, const std::string& help,
                  const std::string& metavar = "TEXT");
  void add_choice(const std::string& name, std::string* out, std::vector<std::string> choices,
                  const std::string& help);
  void add_int(const std::string& name, int64_t* out, int64_t min, int64_t max, const std::string& help);
  // lo_open: the lower bound itself is not allowed.
  void add_float(const std::string& name, double* out, double min, double max, const std::string& help,
                 bool lo_open = false);
  void add_bool(const std::string& name, bool* out, const std::string& help);  // --x, --x=true|false
  void add_repeated(const std::string& name, std::vector<std::string>* out, const std::string& help,
                    const std::string& metavar = "TEXT");  // each use appends
  // A comma-separated list of integers in [min, max] ("512,0,256"); empty_default:
  // what --help says the default is when *out is empty.
  void add_int_list(const std::string& name, std::vector<int64_t>* out, int64_t min, int64_t max,
                    const std::string& help, const std::string& empty_default = "none");

  // A one-letter alias: `-p 512` / `-p=512` mean `--<name> 512` (llama-bench's
  // habit); --help shows "-p, --<name>". The flag must be registered first.
  void add_short(char letter, const std::string& name);
  // Another spelling of a registered flag, written with its dashes: "--n-predict"
  // or "-np" (another program's habit, llama.cpp's mostly). --help names it.
  void add_alias(const std::string& spelling, const std::string& name);
  // A flag of another program that this command does not have ("--lora",
  // "-ngl"): using it is a usage error saying `why` (what to do instead), not a
  // suggestion of a similar-looking flag. Ignored when the spelling is ours.
  void add_foreign(const std::string& spelling, const std::string& why);

  // Parses args (args[0] is the command name). Returns false when --help / -h
  // was given (the caller prints help() and exits 0). Positional arguments go to
  // *positional; when positional is null they are an error. A value that begins
  // with "--" must be attached (--out=--x): `--out --quiet` is a forgotten value,
  // not a file named "--quiet". Throws UsageError.
  bool parse(const Args& args, std::vector<std::string>* positional = nullptr);

  bool given(const std::string& name) const;  // was the flag on the command line?
  std::string help() const;                   // usage line and every flag with its default
  const std::string& command() const { return command_; }

 private:
  struct Flag {
    std::string name, metavar, help, default_text;
    char letter = 0;  // add_short's alias, 0 = none
    std::vector<std::string> aliases;  // add_alias's spellings, with their dashes
    bool takes_value = true;
    bool repeatable = false;
    bool given = false;
    std::function<void(const std::string& value)> set;  // throws UsageError on a bad value
  };
  Flag& add(const std::string& name, const std::string& metavar, const std::string& help, std::string default_text);
  Flag* find(const std::string& name);
  Flag* find_alias(const std::string& spelling);
  const std::string* foreign(const std::string& spelling) const;
  std::string suggestion(const std::string& name) const;
  [[noreturn]] void bad(const std::string& msg) const;

  std::string command_, synopsis_, program_;
  std::vector<Flag> flags_;
  std::vector<std::pair<std::string, std::string>> foreign_;  // spelling -> why
};

// Throws UsageError "MESSAGE" (for checks made after parse(), e.g. combinations).
[[noreturn]] void usage_fail(const std::string& message);

}  // namespace og
