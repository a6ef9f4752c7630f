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
  static constexpr int kMaxGroupDepth = 100;  // protobuf's default recursion limit
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
  // returns the bytes. False when the value does not fit in the input or the
  // wire type is not one protobuf has. A group (type 3) is skipped to its
  // matching end tag, as protobuf skips an unknown group.
  bool value(int field, int wire_type, std::string_view* bytes, int depth = 0) {
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
      case 3: {
        if (depth >= kMaxGroupDepth) return false;
        while (!done()) {
          const auto key = varint();
          if (!key || (*key >> 3) == 0) return false;
          const int f = static_cast<int>(*key >> 3), t = static_cast<int>(*key & 7);
          if (t == 4) return f == field;
          if (!value(f, t, nullptr, depth + 1)) return false;
        }
        return false;  // no end tag
      }
      default: return false;  // an end tag without its start (4), or types 6 and 7
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
    if (!key || (*key >> 3) == 0) return std::nullopt;
    std::string_view bytes;
    const int field = static_cast<int>(*key >> 3), type = static_cast<int>(*key & 7);
    if (!w.value(field, type, &bytes)) return std::nullopt;
    if (field == 1 && type == 2) piece = bytes;
  }
  return std::optional<std::string_view>(piece);
}

}  // namespace

void check_sentencepiece_pieces(std::string_view bytes, const std::string& path) {
  Wire w{bytes};
  for (size_t index = 0; !w.done(); ) {
    const size_t field_at = w.at;
    const auto key = w.varint();
    std::string_view msg;
    const int field = key ? static_cast<int>(*key >> 3) : 0, type = key ? static_cast<int>(*key & 7) : 0;
    OG_CHECK(field != 0 && w.value(field, type, &msg), path,
             ": not a SentencePiece model: the protobuf bytes are malformed at byte ", field_at);
    if (field != 1 || type != 2) continue;
    const auto piece = piece_of(msg);
    OG_CHECK(piece.has_value(), path, ": not a SentencePiece model: piece ", index,
             " is a malformed protobuf message");
    OG_CHECK(!piece->empty() && piece->find('\0') == std::string_view::npos, path, ": SentencePiece piece ", index,
             " is empty or contains a NUL byte");
    ++index;
  }
}

}  // namespace og::tok
