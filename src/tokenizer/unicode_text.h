// UTF-8 helpers shared by the tokenizers: code point decoding that never fails
// (an invalid byte is one unit of its own), the GPT-2 byte <-> unicode map used
// by byte-level BPE vocabularies, and Unicode normalization forms through ICU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace og::tok {

// Length in bytes of the UTF-8 unit starting at s[pos] (1..4). A byte that does
// not start a valid, complete sequence counts as a unit of length 1.
size_t utf8_unit_len(std::string_view s, size_t pos);
// Decodes the unit at s[pos]; returns its length and sets cp (-1 for an invalid byte).
size_t utf8_decode(std::string_view s, size_t pos, int32_t& cp);
void utf8_append(std::string& out, uint32_t cp);
bool utf8_valid(std::string_view s);

// GPT-2 byte-level map: every byte has a printable code point ("Ġ" for ' ').
uint32_t byte_to_unicode(uint8_t b);
// Inverse: -1 when cp is not the image of a byte.
int byte_from_unicode(uint32_t cp);
// Maps a byte-level piece back to raw bytes; false when a char is not a byte image.
bool byte_level_decode(std::string_view piece, std::string& out);
std::string byte_level_encode(std::string_view raw);

// Parses "<0xNN>" (SentencePiece byte pieces); -1 when `piece` is not one.
int parse_byte_piece(std::string_view piece);

enum class NormForm { kNfc, kNfd, kNfkc, kNfkd };
// Unicode normalization (ICU). Invalid UTF-8 bytes are kept as they are: only
// the valid stretches between them are normalized.
std::string normalize_unicode(std::string_view s, NormForm form);
// Full Unicode lowercase (ICU, root locale); invalid bytes kept.
std::string lowercase_unicode(std::string_view s);

}  // namespace og::tok
