// Unicode and Python formatting helpers of the Jinja engine: UTF-8 to code
// points and back, Python's notion of whitespace, case mapping and printable
// characters, and the repr() of floats and strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace og::jinja {

// Invalid UTF-8 bytes decode to U+FFFD.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t c);
size_t utf8_length(std::string_view s);
bool is_ascii(std::string_view s);

bool py_isspace(char32_t c);
// str.splitlines(): \n, \r\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 end lines.
std::vector<std::string> py_splitlines(std::string_view s);
bool py_isprintable(char32_t c);
bool py_isalnum(char32_t c);
bool py_isupper(char32_t c);
bool py_islower(char32_t c);
char32_t py_upper(char32_t c);
char32_t py_lower(char32_t c);
std::string str_upper(std::string_view s);
std::string str_lower(std::string_view s);
std::string str_title(std::string_view s);
std::string str_capitalize(std::string_view s);

// Python's repr(float): shortest round-trip digits, "1.0", "1e-05", "inf".
std::string py_float_repr(double v);
// Python's repr(str): quoted, with Python's choice of quotes and escapes.
std::string py_str_repr(std::string_view s);

}  // namespace og::jinja
