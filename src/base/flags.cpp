// Flags: parsing, value checks, suggestions and the --help text.
#include "base/flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace og {

namespace {

std::string canonical(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string format_double(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

enum class IntParse { kOk, kNotInteger, kOutOfRange };

// A decimal integer, optionally signed; kOutOfRange when it is one but does not fit in int64.
IntParse parse_int(const std::string& s, int64_t* out) {
  if (s.empty()) return IntParse::kNotInteger;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+' && e - b > 1 && b[1] != '-') ++b;
  auto r = std::from_chars(b, e, *out);
  if (r.ptr != e) return IntParse::kNotInteger;
  if (r.ec == std::errc::result_out_of_range) return IntParse::kOutOfRange;
  return r.ec == std::errc() ? IntParse::kOk : IntParse::kNotInteger;
}

std::string range_text(int64_t min, int64_t max) {
  return "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

bool parse_double(const std::string& s, double* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(*out);
}

// A user's value as quoted in an error: whole when short, else its head and size,
// so that a pasted file never floods the one-line message.
std::string quoted(const std::string& v) {
  constexpr size_t kMax = 60;
  // Appended piece by piece: GCC 12 reports "'" + v + "'" as a -Wrestrict false positive.
  std::string q(1, '\'');
  q.append(v, 0, kMax);
  if (v.size() <= kMax) return q.append(1, '\'');
  return q.append("...' (").append(std::to_string(v.size())).append(" bytes)");
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

void usage_fail(const std::string& message) { throw UsageError(message); }

Flags::Flags(std::string command, std::string synopsis, std::string program)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), program_(std::move(program)) {}

void Flags::bad(const std::string& msg) const { throw UsageError(msg); }

Flags::Flag& Flags::add(const std::string& name, const std::string& metavar, const std::string& help,
                        std::string default_text) {
  Flag f;
  f.name = canonical(name);
  f.metavar = metavar;
  f.help = help;
  f.default_text = std::move(default_text);
  flags_.push_back(std::move(f));
  return flags_.back();
}

void Flags::add_string(const std::string& name, std::string* out, const std::string& help,
                       const std::string& metavar) {
  Flag& f = add(name, metavar, help, out->empty() ? "none" : "\"" + *out + "\"");
  f.set = [out](const std::string& v) { *out = v; };
}

void Flags::add_choice(const std::string& name, std::string* out, std::vector<std::string> choices,
                       const std::string& help) {
  std::string joined;
  for (const auto& c : choices) joined += (joined.empty() ? "" : "|") + c;
  Flag& f = add(name, joined, help, out->empty() ? "none" : *out);
  const std::string flag = "--" + f.name;
  f.set = [out, choices, joined, flag](const std::string& v) {
    if (std::find(choices.begin(), choices.end(), v) == choices.end())
      throw UsageError(flag + " must be one of " + joined + ", got " + quoted(v));
    *out = v;
  };
}

void Flags::add_int(const std::string& name, int64_t* out, int64_t min, int64_t max, const std::string& help) {
  Flag& f = add(name, "N", help, std::to_string(*out));
  const std::string flag = "--" + f.name;
  f.set = [out, min, max, flag](const std::string& v) {
    int64_t x = 0;
    const IntParse r = parse_int(v, &x);
    if (r == IntParse::kNotInteger) throw UsageError(flag + " expects an integer, got " + quoted(v));
    if (r == IntParse::kOutOfRange || x < min || x > max)
      throw UsageError(flag + " must be in " + range_text(min, max) + ", got " + quoted(v));
    *out = x;
  };
}

void Flags::add_float(const std::string& name, double* out, double min, double max, const std::string& help,
                      bool lo_open) {
  Flag& f = add(name, "X", help, format_double(*out));
  const std::string flag = "--" + f.name;
  f.set = [out, min, max, lo_open, flag](const std::string& v) {
    double x = 0;
    if (!parse_double(v, &x)) throw UsageError(flag + " expects a number, got " + quoted(v));
    if (x < min || x > max || (lo_open && x == min))
      throw UsageError(flag + " must be in " + (lo_open ? "(" : "[") + format_double(min) + ", " +
                       format_double(max) + "], got " + v);
    *out = x;
  };
}

void Flags::add_bool(const std::string& name, bool* out, const std::string& help) {
  Flag& f = add(name, "", help, *out ? "on" : "off");
  f.takes_value = false;
  const std::string flag = "--" + f.name;
  f.set = [out, flag](const std::string& v) {
    if (v == "" || v == "true" || v == "1" || v == "yes" || v == "on") *out = true;
    else if (v == "false" || v == "0" || v == "no" || v == "off") *out = false;
    else throw UsageError(flag + " takes no value or true|false, got " + quoted(v));
  };
}

void Flags::add_repeated(const std::string& name, std::vector<std::string>* out, const std::string& help,
                         const std::string& metavar) {
  Flag& f = add(name, metavar, help, "none; repeatable");
  f.repeatable = true;
  const std::string flag = "--" + f.name;
  f.set = [out, flag](const std::string& v) {
    if (v.empty()) throw UsageError(flag + " must not be empty");
    out->push_back(v);
  };
}

void Flags::add_int_list(const std::string& name, std::vector<int64_t>* out, int64_t min, int64_t max,
                         const std::string& help, const std::string& empty_default) {
  std::string def;
  for (int64_t x : *out) {
    if (!def.empty()) def += ',';
    def += std::to_string(x);
  }
  Flag& f = add(name, "N,N,...", help, def.empty() ? empty_default : def);
  const std::string flag = "--" + f.name;
  f.set = [out, min, max, flag](const std::string& v) {
    std::vector<int64_t> list;
    size_t start = 0;
    while (true) {
      const size_t comma = v.find(',', start);
      const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      int64_t x = 0;
      const IntParse r = parse_int(item, &x);
      if (r == IntParse::kNotInteger)
        throw UsageError(flag + " expects comma-separated integers, got " + quoted(v));
      if (r == IntParse::kOutOfRange || x < min || x > max)
        throw UsageError(flag + " values must be in " + range_text(min, max) + ", got " + quoted(item));
      list.push_back(x);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    *out = std::move(list);
  };
}

void Flags::add_short(char letter, const std::string& name) {
  Flag* f = find(name);
  if (!f) throw std::logic_error("add_short: no flag --" + name);
  f->letter = letter;
}

void Flags::add_alias(const std::string& spelling, const std::string& name) {
  Flag* f = find(name);
  if (!f || spelling.size() < 2 || spelling[0] != '-') throw std::logic_error("add_alias: bad alias " + spelling);
  f->aliases.push_back(spelling);
}

void Flags::add_foreign(const std::string& spelling, const std::string& why) {
  foreign_.emplace_back(spelling, why);
}

Flags::Flag* Flags::find_alias(const std::string& spelling) {
  for (auto& f : flags_)
    for (const auto& a : f.aliases)
      if (a == spelling) return &f;
  return nullptr;
}

const std::string* Flags::foreign(const std::string& spelling) const {
  for (const auto& [s, why] : foreign_)
    if (s == spelling) return &why;
  return nullptr;
}

Flags::Flag* Flags::find(const std::string& name) {
  const std::string c = canonical(name);
  for (auto& f : flags_)
    if (f.name == c) return &f;
  return nullptr;
}

bool Flags::given(const std::string& name) const {
  const std::string c = canonical(name);
  for (const auto& f : flags_)
    if (f.name == c) return f.given;
  return false;
}

std::string Flags::suggestion(const std::string& name) const {
  const std::string c = canonical(name);
  const Flag* best = nullptr;
  size_t best_d = 0;
  for (const auto& f : flags_) {
    size_t d = edit_distance(c, f.name);
    if (f.name.rfind(c, 0) == 0 || c.rfind(f.name, 0) == 0) d = std::min<size_t>(d, 1);
    if (!best || d < best_d) best = &f, best_d = d;
  }
  if (best && best_d <= std::max<size_t>(2, c.size() / 4)) return " (did you mean --" + best->name + "?)";
  return "";
}

bool Flags::parse(const Args& args, std::vector<std::string>* positional) {
  bool only_positional = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positional || a.size() < 2 || a[0] != '-') {
      if (!positional) bad("unexpected argument " + quoted(a));
      positional->push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "-h" || a == "--help") return false;
    if (a.rfind("--help=", 0) == 0) bad("--help takes no value, got " + quoted(a.substr(7)));
    const size_t eq = a.find('=');
    const std::string spelling = a.substr(0, eq);
    Flag* f = find_alias(spelling);
    if (!f && a.rfind("--", 0) != 0) {  // -x: a one-letter alias
      if (a.size() == 2 || eq == 2)
        for (auto& g : flags_)
          if (g.letter == a[1]) f = &g;
    } else if (!f) {
      f = find(spelling.substr(2));
    }
    if (!f) {
      if (const std::string* why = foreign(spelling)) bad(spelling + ": " + *why);
      if (a.rfind("--", 0) != 0) bad("unknown flag " + quoted(a) + suggestion(a.substr(1)));
      bad("unknown flag " + spelling + suggestion(spelling.substr(2)));
    }
    if (f->given && !f->repeatable) bad("--" + f->name + " given more than once");
    std::string value;
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (f->takes_value) {
      if (i + 1 >= args.size()) bad("--" + f->name + " needs a value");
      value = args[++i];
      if (value.size() > 2 && value.rfind("--", 0) == 0)
        bad("--" + f->name + " needs a value, got the flag-like " + quoted(value) + " (write --" + f->name + "=" +
            value + " if that is the value)");
    }
    // --flag= and --flag "" are the same empty value; the flag's type judges it.
    f->set(value);
    f->given = true;
  }
  return true;
}

std::string Flags::help() const {
  std::ostringstream os;
  os << "usage: " << program_ << (command_.empty() ? "" : " ") << command_ << " " << synopsis_ << "\n\noptions:\n";
  // Descriptions start in one column; a flag too long for it (a long list of
  // choices) puts its description on the next line instead.
  constexpr size_t kMaxWidth = 30;
  size_t width = 6;  // "--help"
  for (const auto& f : flags_) {
    const size_t w = f.name.size() + f.metavar.size() + 3 + (f.letter ? 4 : 0);
    if (w <= kMaxWidth) width = std::max(width, w);
  }
  auto line = [&](const std::string& left, const std::string& text) {
    os << "  " << left;
    if (left.size() > width) os << "\n  " << std::string(width, ' ');
    else os << std::string(width - left.size(), ' ');
    os << "  " << text << "\n";
  };
  for (const auto& f : flags_) {
    std::string also;
    for (const auto& a : f.aliases) also += (also.empty() ? "; also " : ", ") + a;
    line((f.letter ? std::string("-") + f.letter + ", " : std::string()) + "--" + f.name +
             (f.metavar.empty() ? "" : " " + f.metavar),
         f.help + " (default: " + f.default_text + also + ")");
  }
  line("--help", "this text");
  os << "\nFlags may be written --flag value or --flag=value; '_' may replace '-' in names.\n";
  return os.str();
}

}  // namespace og
