// Unicode and Python formatting helpers of the Jinja engine: UTF-8 to code
// points and back, Python's notion of whitespace, case mapping and printable
// characters, and the repr() of floats and strings.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace og::jinja {

// The O(n) helpers here charge the render's work meter (meter.h) a unit a byte.

// Invalid UTF-8 bytes decode to U+FFFD.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t c);
size_t utf8_length(std::string_view s);
bool is_ascii(std::string_view s);

bool py_isspace(char32_t c);
// str.splitlines(): \n, \r\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 end lines.
std::vector<std::string> py_splitlines(std::string_view s);
// The same, one line at a time, without holding them all.
void for_each_line(std::string_view s, const std::function<void(std::string)>& fn);
// std::string's find(needle, from) / rfind(needle, last_start), in time
// proportional to the bytes compared, every one of them charged to the meter
// (a plain find is O(n*m) on hostile input such as 'aaa...ab' in 'aaa...a').
size_t text_find(std::string_view hay, std::string_view needle, size_t from = 0);
size_t text_rfind(std::string_view hay, std::string_view needle, size_t last_start = std::string_view::npos);
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
