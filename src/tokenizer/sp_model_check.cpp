// A minimal protobuf wire-format walk over a SentencePiece ModelProto:
// field 1 of the model is a repeated SentencePiece message whose field 1 is
// the piece text. Only what check_sentencepiece_pieces needs is decoded.
#include "tokenizer/sp_model_check.h"

#include <cstdint>
#include <optional>

#include "base/error.h"

namespace og::tok {
namespace {

// A cursor over protobuf bytes; every read returns nullopt on truncation.
struct Wire {
  std::string_view b;
  size_t at = 0;

  bool done() const { return at >= b.size(); }

  std::optional<uint64_t> varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= b.size()) return std::nullopt;
      const auto c = static_cast<uint8_t>(b[at++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    return std::nullopt;
  }

  // Skips a field's value of `wire_type`; for length-delimited values
  // returns the bytes. False when the value does not fit in the input.
  bool value(int wire_type, std::string_view* bytes) {
    switch (wire_type) {
      case 0: return varint().has_value();
      case 1: return skip(8);
      case 5: return skip(4);
      case 2: {
        const auto n = varint();
        if (!n || *n > b.size() - at) return false;
        if (bytes) *bytes = b.substr(at, *n);
        at += *n;
        return true;
      }
      default: return false;  // groups (3, 4) and unknown types: not in a ModelProto
    }
  }

  bool skip(size_t n) {
    if (n > b.size() - at) return false;
    at += n;
    return true;
  }
};

// The piece text of one SentencePiece message ("" when it has none, as
// libsentencepiece reads it); nullopt when the message is malformed.
std::optional<std::string_view> piece_of(std::string_view msg) {
  Wire w{msg};
  std::string_view piece;
  while (!w.done()) {
    const auto key = w.varint();
    if (!key) return std::nullopt;
    std::string_view bytes;
    const int field = static_cast<int>(*key >> 3), type = static_cast<int>(*key & 7);
    if (!w.value(type, &bytes)) return std::nullopt;
    if (field == 1 && type == 2) piece = bytes;
  }
  return std::optional<std::string_view>(piece);
}

}  // namespace

void check_sentencepiece_pieces(std::string_view bytes, const std::string& path) {
  Wire w{bytes};
  for (size_t index = 0; !w.done(); ) {
    const auto key = w.varint();
    if (!key) return;
    std::string_view msg;
    const int field = static_cast<int>(*key >> 3), type = static_cast<int>(*key & 7);
    if (!w.value(type, &msg)) return;
    if (field != 1 || type != 2) continue;
    const auto piece = piece_of(msg);
    OG_CHECK(!piece || (!piece->empty() && piece->find('\0') == std::string_view::npos), path,
             ": SentencePiece piece ", index, " is empty or contains a NUL byte");
    ++index;
  }
}

}  // namespace og::tok
