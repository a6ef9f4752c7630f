// Checks a serialized SentencePiece ModelProto for what libsentencepiece
// cannot survive. Its trie builder (darts-clone, inside the shared library)
// throws on a piece that is empty or holds a NUL byte, and that exception
// cannot cross the library's frames: the process aborts. So such a file is
// rejected here, before libsentencepiece sees it.
#pragma once

#include <string>
#include <string_view>

namespace og::tok {

// Throws og::Error naming `path` when a piece of the ModelProto in `bytes` is
// empty or contains a NUL byte, or when `bytes` (or a piece's message) is not
// well-formed protobuf wire format. Only bytes this walk understands from end
// to end reach libsentencepiece: a walk laxer or stricter than protobuf's
// parser must never let a bad piece through (groups, wire types 3 and 4, are
// skipped as protobuf skips them).
void check_sentencepiece_pieces(std::string_view bytes, const std::string& path);

}  // namespace og::tok
