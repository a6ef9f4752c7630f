// The Jinja parser (see parser.h): recursive descent over jinja2's grammar.
// Expressions: condexpr > or > and > not > compare > + - > ~ > * / // % > ** >
// unary > primary with postfix (. [] ()) and filter/test chains.
#include "template/parser.h"

#include <charconv>
#include <cstdlib>

#include "base/error.h"
#include "template/lexer.h"

namespace og::jinja {
namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, int max_nesting) : t_(std::move(toks)), max_nesting_(max_nesting) {}
  Body parse_all();

 private:
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.nesting_ > p.max_nesting_) p.error(cat("template nests deeper than ", p.max_nesting_, " levels"));
    }
    ~Nest() { --p.nesting_; }
  };
  // A left-leaning chain (a + b + c, a.b.c, x|f|g) deepens the tree by one per
  // link: each link counts as a level of nesting until the chain ends.
  struct Chain {
    Parser& p;
    int links = 0;
    explicit Chain(Parser& parser) : p(parser) {}
    void link() {
      ++links;
      if (++p.nesting_ > p.max_nesting_) p.error(cat("template nests deeper than ", p.max_nesting_, " levels"));
    }
    ~Chain() { p.nesting_ -= links; }
  };

  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).kind == Tok::Op && peek(k).text == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).kind == Tok::Name && peek(k).text == n; }
  bool skip_op(const char* op) { return is_op(op) ? (++i_, true) : false; }
  bool skip_name(const char* n) { return is_name(n) ? (++i_, true) : false; }
  [[noreturn]] void error(const std::string& msg) const { fail("line ", peek().line, ": ", msg); }
  void expect_op(const char* op);
  std::string expect_name();
  std::string describe(const Token& t) const;
  ExprPtr make(ExprKind k) const {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = peek().line;
    return e;
  }

  Body parse_body(std::initializer_list<const char*> ends);
  std::unique_ptr<Stmt> parse_statement();
  std::unique_ptr<Stmt> parse_if();
  std::unique_ptr<Stmt> parse_for();
  std::unique_ptr<Stmt> parse_set();
  std::unique_ptr<Stmt> parse_macro(bool call_block);
  std::unique_ptr<Stmt> parse_filter_block();
  void parse_params(Stmt& s);
  void end_tag() {
    if (peek().kind != Tok::BlockEnd) error(cat("expected end of statement block, got ", describe(peek())));
    ++i_;
  }
  std::vector<std::string> parse_targets();

  ExprPtr parse_tuple(bool with_condexpr = true);
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter = true);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);
  void parse_call_args(Expr& e);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr binary(ExprKind k, const std::string& op, ExprPtr l, ExprPtr r) {
    auto e = make(k);
    e->line = l->line;
    e->name = op;
    e->kids.push_back(std::move(l));
    e->kids.push_back(std::move(r));
    return e;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int nesting_ = 0;
  int max_nesting_;
};

std::string Parser::describe(const Token& t) const {
  switch (t.kind) {
    case Tok::Eof: return "end of template";
    case Tok::BlockEnd: return "end of statement block";
    case Tok::VarEnd: return "end of print statement";
    case Tok::Text: return "template data";
    case Tok::String: return "string";
    default: return "'" + t.text + "'";
  }
}

void Parser::expect_op(const char* op) {
  if (!skip_op(op)) error(cat("expected '", op, "', got ", describe(peek())));
}

std::string Parser::expect_name() {
  if (peek().kind != Tok::Name) error(cat("expected a name, got ", describe(peek())));
  return next().text;
}

Body Parser::parse_all() {
  Body body = parse_body({});
  if (peek().kind != Tok::Eof) error(cat("unexpected '", peek(1).text, "'"));
  return body;
}

// Statements up to (not including) a {% tag %} named in ends, or the end of the template.
Body Parser::parse_body(std::initializer_list<const char*> ends) {
  Nest nest(*this);
  Body body;
  while (true) {
    const Token& t = peek();
    if (t.kind == Tok::Eof) {
      if (ends.size() == 0) return body;
      std::string want;
      for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
      error(cat("unexpected end of template, expected ", want));
    }
    if (t.kind == Tok::Text) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::Text;
      s->line = t.line;
      s->text = t.text;
      body.push_back(std::move(s));
      ++i_;
    } else if (t.kind == Tok::VarBegin) {
      ++i_;
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::Output;
      s->line = t.line;
      s->expr = parse_tuple();
      if (peek().kind != Tok::VarEnd) error(cat("expected end of print statement, got ", describe(peek())));
      ++i_;
      body.push_back(std::move(s));
    } else if (t.kind == Tok::BlockBegin) {
      for (const char* e : ends)
        if (is_name(e, 1)) return body;
      ++i_;
      body.push_back(parse_statement());
    } else {
      error(cat("unexpected ", describe(t)));
    }
  }
}

std::unique_ptr<Stmt> Parser::parse_statement() {
  const Token& t = peek();
  if (t.kind != Tok::Name) error("tag name expected");
  std::string name = t.text;
  if (name == "if") return parse_if();
  if (name == "for") return parse_for();
  if (name == "set") return parse_set();
  if (name == "macro") return parse_macro(false);
  if (name == "call") return parse_macro(true);
  if (name == "filter") return parse_filter_block();
  auto s = std::make_unique<Stmt>();
  s->line = t.line;
  ++i_;
  if (name == "break" || name == "continue") {
    s->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
    end_tag();
    return s;
  }
  if (name == "with") {
    s->kind = StmtKind::With;
    while (peek().kind != Tok::BlockEnd) {
      if (!s->params.empty()) expect_op(",");
      s->params.push_back(expect_name());
      expect_op("=");
      s->defaults.push_back(parse_expression());
    }
    end_tag();
    s->body = parse_body({"endwith"});
    i_ += 2;
    end_tag();
    return s;
  }
  if (name == "generation") {
    s->kind = StmtKind::Scope;
    end_tag();
    s->body = parse_body({"endgeneration"});
    i_ += 2;
    end_tag();
    return s;
  }
  --i_;
  error(cat("encountered unknown tag '", name, "'"));
}

std::unique_ptr<Stmt> Parser::parse_if() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::If;
  s->line = next().line;  // if / elif
  s->expr = parse_tuple(false);
  end_tag();
  s->body = parse_body({"elif", "else", "endif"});
  ++i_;  // {%
  if (is_name("elif")) {
    Nest nest(*this);
    s->else_body.push_back(parse_if());
    return s;
  }
  if (skip_name("else")) {
    end_tag();
    s->else_body = parse_body({"endif"});
    ++i_;
  }
  ++i_;  // endif
  end_tag();
  return s;
}

std::vector<std::string> Parser::parse_targets() {
  std::vector<std::string> names;
  bool paren = skip_op("(");
  do {
    if (paren && is_op(")")) break;
    names.push_back(expect_name());
  } while (skip_op(","));
  if (paren) expect_op(")");
  return names;
}

std::unique_ptr<Stmt> Parser::parse_for() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::For;
  s->line = next().line;
  s->targets = parse_targets();
  if (!skip_name("in")) error(cat("expected 'in', got ", describe(peek())));
  s->expr = parse_tuple(false);
  if (skip_name("if")) s->cond = parse_expression();
  if (is_name("recursive")) error("recursive for loops are not supported");
  end_tag();
  s->body = parse_body({"endfor", "else"});
  ++i_;
  if (skip_name("else")) {
    end_tag();
    s->else_body = parse_body({"endfor"});
    ++i_;
  }
  ++i_;
  end_tag();
  return s;
}

std::unique_ptr<Stmt> Parser::parse_set() {
  auto s = std::make_unique<Stmt>();
  s->line = next().line;
  if (peek().kind == Tok::Name && is_op(".", 1)) {
    s->targets.push_back(next().text);
    ++i_;
    s->text = expect_name();
    expect_op("=");
    s->kind = StmtKind::Set;
    s->expr = parse_tuple();
    end_tag();
    return s;
  }
  s->targets = parse_targets();
  if (skip_op("=")) {
    s->kind = StmtKind::Set;
    s->expr = parse_tuple();
    end_tag();
    return s;
  }
  if (s->targets.size() != 1) error("a block set takes one name");
  s->kind = StmtKind::SetBlock;
  if (is_op("|")) s->filter = parse_filter(nullptr, true);
  end_tag();
  s->body = parse_body({"endset"});
  i_ += 2;
  end_tag();
  return s;
}

void Parser::parse_params(Stmt& s) {
  expect_op("(");
  while (!is_op(")")) {
    if (!s.params.empty()) expect_op(",");
    if (is_op(")")) break;
    s.params.push_back(expect_name());
    s.defaults.push_back(skip_op("=") ? parse_expression() : nullptr);
  }
  expect_op(")");
}

// {% macro name(params) %}...{% endmacro %} and {% call(params) expr %}...{% endcall %}
std::unique_ptr<Stmt> Parser::parse_macro(bool call_block) {
  auto s = std::make_unique<Stmt>();
  s->line = next().line;
  if (call_block) {
    s->kind = StmtKind::CallBlock;
    if (is_op("(")) parse_params(*s);
    s->expr = parse_expression();
    if (s->expr->kind != ExprKind::Call) error("expected call");
  } else {
    s->kind = StmtKind::Macro;
    s->text = expect_name();
    parse_params(*s);
  }
  end_tag();
  const char* end = call_block ? "endcall" : "endmacro";
  s->body = parse_body({end});
  i_ += 2;
  if (!call_block && peek().kind == Tok::Name && peek().text == s->text) ++i_;
  end_tag();
  return s;
}

std::unique_ptr<Stmt> Parser::parse_filter_block() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::FilterBlock;
  s->line = next().line;
  s->filter = parse_filter(nullptr, true);
  end_tag();
  s->body = parse_body({"endfilter"});
  i_ += 2;
  end_tag();
  return s;
}

// ---- expressions ----

// a, b, c (a tuple) or a single expression.
ExprPtr Parser::parse_tuple(bool with_condexpr) {
  int line = peek().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  auto at_end = [&] {
    Tok k = peek().kind;
    return k == Tok::VarEnd || k == Tok::BlockEnd || is_op(")") || is_name("if");
  };
  while (true) {
    if (!items.empty()) {
      if (!skip_op(",")) break;
      is_tuple = true;
      if (at_end()) break;
    }
    items.push_back(parse_expression(with_condexpr));
  }
  if (!is_tuple) return std::move(items[0]);
  auto e = make(ExprKind::Tuple);
  e->line = line;
  e->kids = std::move(items);
  return e;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  Nest nest(*this);
  if (!with_condexpr) return parse_or();
  ExprPtr expr = parse_or();
  Chain chain(*this);
  while (skip_name("if")) {
    chain.link();
    auto e = make(ExprKind::CondExpr);
    e->line = expr->line;
    e->kids.push_back(parse_or());
    e->kids.push_back(std::move(expr));
    e->kids.push_back(skip_name("else") ? parse_expression() : nullptr);
    expr = std::move(e);
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr l = parse_and();
  Chain chain(*this);
  while (skip_name("or")) {
    chain.link();
    l = binary(ExprKind::Or, "or", std::move(l), parse_and());
  }
  return l;
}

ExprPtr Parser::parse_and() {
  ExprPtr l = parse_not();
  Chain chain(*this);
  while (skip_name("and")) {
    chain.link();
    l = binary(ExprKind::And, "and", std::move(l), parse_not());
  }
  return l;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    Nest nest(*this);
    auto e = make(ExprKind::Unary);
    ++i_;
    e->name = "not";
    e->kids.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (peek().kind == Tok::Op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                   peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
      op = next().text;
    } else if (skip_name("in")) {
      op = "in";
    } else if (is_name("not") && is_name("in", 1)) {
      i_ += 2;
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(ExprKind::Compare);
      cmp->line = first->line;
      cmp->kids.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->kids.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr l = parse_concat();
  Chain chain(*this);
  while (is_op("+") || is_op("-")) {
    chain.link();
    std::string op = next().text;
    l = binary(ExprKind::Binary, op, std::move(l), parse_concat());
  }
  return l;
}

ExprPtr Parser::parse_concat() {
  ExprPtr l = parse_math2();
  Chain chain(*this);
  while (skip_op("~")) {
    chain.link();
    l = binary(ExprKind::Binary, "~", std::move(l), parse_math2());
  }
  return l;
}

ExprPtr Parser::parse_math2() {
  ExprPtr l = parse_pow();
  Chain chain(*this);
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    chain.link();
    std::string op = next().text;
    l = binary(ExprKind::Binary, op, std::move(l), parse_pow());
  }
  return l;
}

ExprPtr Parser::parse_pow() {
  ExprPtr l = parse_unary();
  Chain chain(*this);
  while (skip_op("**")) {
    chain.link();
    l = binary(ExprKind::Binary, "**", std::move(l), parse_unary());
  }
  return l;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Nest nest(*this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make(ExprKind::Unary);
    node->name = next().text;
    node->kids.push_back(parse_unary(false));
  } else {
    node = parse_postfix(parse_primary());
  }
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  Nest nest(*this);
  const Token& t = peek();
  if (t.kind == Tok::Name) {
    ++i_;
    auto e = make(ExprKind::Literal);
    e->line = t.line;
    if (t.text == "true" || t.text == "True") e->value = Value(true);
    else if (t.text == "false" || t.text == "False") e->value = Value(false);
    else if (t.text == "none" || t.text == "None") e->value = Value::none();
    else {
      e->kind = ExprKind::Name;
      e->name = t.text;
    }
    return e;
  }
  if (t.kind == Tok::String) {
    auto e = make(ExprKind::Literal);
    std::string s;
    while (peek().kind == Tok::String) s += next().text;
    e->value = Value(std::move(s));
    return e;
  }
  if (t.kind == Tok::Int || t.kind == Tok::Float) {
    auto e = make(ExprKind::Literal);
    ++i_;
    if (t.kind == Tok::Float) {
      e->value = Value(std::strtod(t.text.c_str(), nullptr));
    } else {
      int64_t v = 0;
      auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      if (r.ec != std::errc()) error(cat("integer literal out of range: ", t.text));
      e->value = Value(v);
    }
    return e;
  }
  if (skip_op("(")) {
    if (skip_op(")")) {
      auto e = make(ExprKind::Tuple);
      return e;
    }
    ExprPtr e = parse_tuple();
    expect_op(")");
    return e;
  }
  if (is_op("[") || is_op("{")) {
    bool is_dict = is_op("{");
    auto e = make(is_dict ? ExprKind::Dict : ExprKind::List);
    ++i_;
    const char* close = is_dict ? "}" : "]";
    while (!is_op(close)) {
      if (!e->kids.empty()) expect_op(",");
      if (is_op(close)) break;
      e->kids.push_back(parse_expression());
      if (is_dict) {
        expect_op(":");
        e->kids.push_back(parse_expression());
      }
    }
    expect_op(close);
    return e;
  }
  error(cat("unexpected ", describe(t)));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  Chain chain(*this);
  while (true) {
    chain.link();
    if (is_op(".")) {
      ++i_;
      auto e = make(ExprKind::Attr);
      if (peek().kind == Tok::Name) {
        e->name = next().text;
      } else if (peek().kind == Tok::Int) {
        e->kind = ExprKind::Index;
        e->kids.push_back(std::move(node));
        auto idx = make(ExprKind::Literal);
        idx->value = Value(static_cast<int64_t>(std::strtoll(next().text.c_str(), nullptr, 10)));
        e->kids.push_back(std::move(idx));
        node = std::move(e);
        continue;
      } else {
        error(cat("expected name or number, got ", describe(peek())));
      }
      e->kids.push_back(std::move(node));
      node = std::move(e);
    } else if (is_op("[")) {
      ++i_;
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      auto e = make(ExprKind::Call);
      e->kids.push_back(std::move(node));
      parse_call_args(*e);
      node = std::move(e);
    } else {
      return node;
    }
  }
}

// After '[': an index or a slice, then ']'.
ExprPtr Parser::parse_subscript(ExprPtr node) {
  Nest nest(*this);
  ExprPtr parts[3];
  int colons = 0;
  if (!is_op(":")) parts[0] = parse_expression();
  while (colons < 2 && skip_op(":")) {
    ++colons;
    if (!is_op(":") && !is_op("]")) parts[colons] = parse_expression();
  }
  expect_op("]");
  auto e = make(colons ? ExprKind::Slice : ExprKind::Index);
  e->line = node->line;
  e->kids.push_back(std::move(node));
  for (int k = 0; k <= (colons ? 2 : 0); ++k) e->kids.push_back(std::move(parts[k]));
  if (!colons && !e->kids[1]) error("expected an index");
  return e;
}

// '(' args ')' appended to e->kids / e->kw_*.
void Parser::parse_call_args(Expr& e) {
  Nest nest(*this);
  expect_op("(");
  bool first = true;
  while (!is_op(")")) {
    if (!first) expect_op(",");
    first = false;
    if (is_op(")")) break;
    if (peek().kind == Tok::Name && is_op("=", 1)) {
      e.kw_names.push_back(next().text);
      ++i_;
      e.kw_values.push_back(parse_expression());
    } else {
      if (!e.kw_names.empty()) error("positional argument follows keyword argument");
      e.kids.push_back(parse_expression());
    }
  }
  expect_op(")");
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  Chain chain(*this);
  while (true) {
    chain.link();
    if (is_op("|")) {
      node = parse_filter(std::move(node), false);
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      auto e = make(ExprKind::Call);
      e->kids.push_back(std::move(node));
      parse_call_args(*e);
      node = std::move(e);
    } else {
      return node;
    }
  }
}

// | name[.name](args) | ... ; start_inline: the chain of a {% filter %} or {% set x | f %}.
ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  bool first = true;
  Chain chain(*this);
  while (is_op("|") || (start_inline && first)) {
    chain.link();
    if (!(start_inline && first && !is_op("|"))) expect_op("|");
    first = false;
    auto e = make(ExprKind::Filter);
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    e->kids.push_back(std::move(node));
    if (is_op("(")) parse_call_args(*e);
    node = std::move(e);
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  Nest nest(*this);
  auto e = make(ExprKind::Test);
  ++i_;  // is
  e->negate = skip_name("not");
  e->name = expect_name();
  while (skip_op(".")) e->name += "." + expect_name();
  e->kids.push_back(std::move(node));
  const Token& t = peek();
  if (is_op("(")) {
    parse_call_args(*e);
  } else if ((t.kind == Tok::Name && t.text != "else" && t.text != "or" && t.text != "and" && t.text != "if" &&
              t.text != "is" && t.text != "in" && t.text != "not") ||
             t.kind == Tok::String || t.kind == Tok::Int || t.kind == Tok::Float || is_op("[") || is_op("{")) {
    e->kids.push_back(parse_postfix(parse_primary()));
  }
  return e;
}

}  // namespace

Body parse_template(std::string_view source, int max_nesting) {
  Body body = Parser(tokenize(source), max_nesting).parse_all();
  check_names(body);
  return body;
}

}  // namespace og::jinja
