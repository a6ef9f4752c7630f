// The Jinja parser: tokens to a statement tree. Nesting (of expressions and of
// blocks together) is bounded, so hostile input cannot overflow the stack.
#pragma once

#include <string_view>

#include "template/ast.h"

namespace og::jinja {

// Throws og::Error("line N: ...") on a syntax error or nesting deeper than max_nesting.
Body parse_template(std::string_view source, int max_nesting);

// As jinja2's compiler: an unknown filter or test is a syntax error unless it
// sits in an `if` (its test or its branches) or an inline if, where jinja2
// defers the check to the render (names_check.cpp).
void check_names(const Body& body);

}  // namespace og::jinja
