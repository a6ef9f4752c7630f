// The Jinja parser: tokens to a statement tree. Nesting (of expressions and of
// blocks together) is bounded, so hostile input cannot overflow the stack.
#pragma once

#include <string_view>

#include "template/ast.h"

namespace og::jinja {

// Throws og::Error("line N: ...") on a syntax error or nesting deeper than max_nesting.
Body parse_template(std::string_view source, int max_nesting);

}  // namespace og::jinja
