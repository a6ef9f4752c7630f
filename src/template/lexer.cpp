// The Jinja lexer (see lexer.h). Follows jinja2's lexer: newlines are
// normalised to \n, one trailing newline is dropped, a block or comment tag
// alone on its line takes the line's indentation with it (lstrip_blocks), and
// the newline after a block or comment tag is dropped (trim_blocks).
#include "template/lexer.h"

#include <cstring>

#include "base/error.h"
#include "template/text.h"

namespace og::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalize_newlines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out.push_back(src[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int count_newlines(std::string_view s, size_t from, size_t to) {
  int n = 0;
  for (size_t i = from; i < to; ++i) n += s[i] == '\n';
  return n;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}
  std::vector<Token> run();

 private:
  [[noreturn]] void error(const std::string& msg) const { fail("line ", line_, ": ", msg); }
  void emit_text(std::string_view text, char sign, bool lstrip);
  void lex_comment(size_t pos);
  size_t skip_ws(size_t p) const {
    while (p < src_.size() && is_ws(src_[p])) ++p;
    return p;
  }
  bool try_raw(size_t tag, char sign);
  void lex_tag(bool block);
  void lex_string();
  void lex_number();
  void lex_operator();

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> out_;
  std::vector<char> balance_;
};

// Emits the data before a tag, stripped as the tag's sign and lstrip_blocks say.
void Lexer::emit_text(std::string_view text, char sign, bool lstrip) {
  int lines = count_newlines(text, 0, text.size());
  if (sign == '-') {
    size_t end = text.size();
    while (end > 0 && is_ws(text[end - 1])) --end;
    text = text.substr(0, end);
  } else if (sign != '+' && lstrip) {
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if (l_pos > 0 || line_starting_) {
      bool all_ws = l_pos < text.size();
      for (size_t i = l_pos; i < text.size(); ++i) all_ws = all_ws && is_ws(text[i]);
      if (all_ws) text = text.substr(0, l_pos);
    }
  }
  if (!text.empty()) out_.push_back({Tok::Text, std::string(text), line_});
  line_ += lines;
}

void Lexer::lex_comment(size_t pos) {
  size_t end = src_.find("#}", pos);
  if (end == std::string::npos) error("missing end of comment tag");
  line_ += count_newlines(src_, pos, end);
  char sign = end > pos ? src_[end - 1] : 0;
  size_t after = end + 2;
  if (sign == '-') {
    size_t p = skip_ws(after);
    line_ += count_newlines(src_, after, p);
    after = p;
  } else if (sign != '+' && after < src_.size() && src_[after] == '\n') {
    ++after;
    ++line_;
  }
  line_starting_ = src_[after - 1] == '\n';
  pos_ = after;
}

// {% raw %}...{% endraw %}: the body is data, untouched.
bool Lexer::try_raw(size_t tag, char sign) {
  size_t p = skip_ws(tag + 2 + (sign ? 1 : 0));
  if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
  p = skip_ws(p + 3);
  if (src_.compare(p, 3, "-%}") == 0) {
    p = skip_ws(p + 3);
  } else if (src_.compare(p, 2, "%}") == 0) {
    p += 2;
  } else {
    return false;
  }
  line_ += count_newlines(src_, tag, p);
  size_t search = p;
  while (true) {
    size_t b = src_.find("{%", search);
    if (b == std::string::npos) error("missing end of raw directive");
    char esign = (b + 2 < src_.size() && (src_[b + 2] == '-' || src_[b + 2] == '+')) ? src_[b + 2] : 0;
    size_t q = skip_ws(b + 2 + (esign ? 1 : 0));
    if (src_.compare(q, 6, "endraw") != 0) {
      search = b + 2;
      continue;
    }
    q = skip_ws(q + 6);
    size_t end;
    if (src_.compare(q, 3, "+%}") == 0) {
      end = q + 3;
    } else if (src_.compare(q, 3, "-%}") == 0) {
      end = skip_ws(q + 3);
    } else if (src_.compare(q, 2, "%}") == 0) {
      end = q + 2;
      if (end < src_.size() && src_[end] == '\n') ++end;
    } else {
      search = b + 2;
      continue;
    }
    line_starting_ = false;
    emit_text(std::string_view(src_).substr(p, b - p), esign, true);
    line_ += count_newlines(src_, b, end);
    line_starting_ = src_[end - 1] == '\n';
    pos_ = end;
    return true;
  }
}

std::vector<Token> Lexer::run() {
  while (pos_ < src_.size()) {
    size_t tag = src_.find('{', pos_);
    while (tag != std::string::npos && tag + 1 < src_.size() && src_[tag + 1] != '{' && src_[tag + 1] != '%' &&
           src_[tag + 1] != '#')
      tag = src_.find('{', tag + 1);
    if (tag == std::string::npos || tag + 1 >= src_.size()) {
      out_.push_back({Tok::Text, src_.substr(pos_), line_});
      line_ += count_newlines(src_, pos_, src_.size());
      break;
    }
    char kind = src_[tag + 1];
    char sign = (tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')) ? src_[tag + 2] : 0;
    std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
    emit_text(text, sign, kind != '{');
    size_t body = tag + 2 + (sign ? 1 : 0);
    if (kind == '#') {
      lex_comment(body);
      continue;
    }
    if (kind == '%' && try_raw(tag, sign)) continue;
    out_.push_back({kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", line_});
    pos_ = body;
    lex_tag(kind == '%');
  }
  // As jinja2, the end of the template is on the line of the last token.
  out_.push_back({Tok::Eof, "", out_.empty() ? 1 : out_.back().line});
  return std::move(out_);
}

// Tokens inside {{ }} or {% %} up to the closing tag (when brackets balance).
void Lexer::lex_tag(bool block) {
  const char* close = block ? "%}" : "}}";
  while (true) {
    size_t p = pos_;
    while (p < src_.size() && is_ws(src_[p])) {
      line_ += src_[p] == '\n';
      ++p;
    }
    pos_ = p;
    if (pos_ >= src_.size()) return;  // the parser reports the missing end of the tag
    if (balance_.empty()) {
      bool minus = src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0;
      bool plus = block && src_[pos_] == '+' && src_.compare(pos_ + 1, 2, close) == 0;
      if (minus || plus || src_.compare(pos_, 2, close) == 0) {
        out_.push_back({block ? Tok::BlockEnd : Tok::VarEnd, "", line_});
        size_t after = pos_ + 2 + ((minus || plus) ? 1 : 0);
        if (minus) {
          size_t q = skip_ws(after);
          line_ += count_newlines(src_, after, q);
          after = q;
        } else if (block && !plus && after < src_.size() && src_[after] == '\n') {
          ++after;
          ++line_;
        }
        line_starting_ = src_[after - 1] == '\n';
        pos_ = after;
        return;
      }
    }
    char c = src_[pos_];
    if (c == '\'' || c == '"') {
      lex_string();
    } else if (is_digit(c)) {
      lex_number();
    } else if (is_name_start(c)) {
      size_t e = pos_;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      out_.push_back({Tok::Name, src_.substr(pos_, e - pos_), line_});
      pos_ = e;
    } else {
      lex_operator();
    }
  }
}

void Lexer::lex_operator() {
  static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                     ">",  "=",  ".",  ",",  ":",  "|",  "(", ")", "[", "]", "{", "}"};
  for (const char* op : kOps) {
    size_t n = std::strlen(op);
    if (src_.compare(pos_, n, op) != 0) continue;
    char c = op[0];
    if (n == 1 && (c == '(' || c == '[' || c == '{')) {
      balance_.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (n == 1 && (c == ')' || c == ']' || c == '}')) {
      if (balance_.empty()) error(cat("unexpected '", c, "'"));
      if (balance_.back() != c) error(cat("unexpected '", c, "', expected '", balance_.back(), "'"));
      balance_.pop_back();
    }
    out_.push_back({Tok::Op, op, line_});
    pos_ += n;
    return;
  }
  unsigned char u = static_cast<unsigned char>(src_[pos_]);
  error(u >= 0x20 && u < 0x7F ? cat("unexpected char '", src_[pos_], "'") : cat("unexpected byte 0x", std::hex, int(u)));
}

void Lexer::lex_number() {
  size_t e = pos_;
  auto digits = [&](size_t& p) {
    size_t start = p;
    while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p > start && p + 1 < src_.size() && is_digit(src_[p + 1])))) ++p;
    return p > start;
  };
  bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
  digits(e);
  bool is_float = false;
  if (!after_dot) {
    size_t p = e;
    if (p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      ++p;
      digits(p);
      is_float = true;
      e = p;
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (digits(q)) {
        is_float = true;
        e = q;
      }
    }
  }
  std::string text;
  for (size_t i = pos_; i < e; ++i)
    if (src_[i] != '_') text.push_back(src_[i]);
  out_.push_back({is_float ? Tok::Float : Tok::Int, text, line_});
  pos_ = e;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void Lexer::lex_string() {
  char q = src_[pos_];
  int start_line = line_;
  std::string out;
  size_t p = pos_ + 1;
  while (true) {
    if (p >= src_.size()) fail("line ", start_line, ": unterminated string literal");
    char c = src_[p];
    if (c == q) break;
    if (c == '\n') ++line_;
    if (c != '\\' || p + 1 >= src_.size()) {
      out.push_back(c);
      ++p;
      continue;
    }
    char n = src_[p + 1];
    p += 2;
    switch (n) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'a': out.push_back('\a'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'v': out.push_back('\v'); break;
      case '\\': out.push_back('\\'); break;
      case '\'': out.push_back('\''); break;
      case '"': out.push_back('"'); break;
      case '\n': ++line_; break;
      case 'x':
      case 'u':
      case 'U': {
        int len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
        char32_t cp = 0;
        for (int i = 0; i < len; ++i) {
          int h = p + i < src_.size() ? hex_value(src_[p + i]) : -1;
          if (h < 0) fail("line ", line_, ": truncated \\", n, " escape in a string literal");
          cp = cp * 16 + static_cast<char32_t>(h);
        }
        if (cp > 0x10FFFF) fail("line ", line_, ": illegal Unicode character in a string literal");
        utf8_append(out, cp);
        p += len;
        break;
      }
      default:
        if (n >= '0' && n <= '7') {
          char32_t cp = n - '0';
          for (int i = 0; i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i) cp = cp * 8 + (src_[p++] - '0');
          utf8_append(out, cp);
        } else {
          out.push_back('\\');
          out.push_back(n);
          if (n == '\n') ++line_;
        }
    }
  }
  out_.push_back({Tok::String, out, start_line});
  pos_ = p + 1;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalize_newlines(source)).run(); }

}  // namespace og::jinja
