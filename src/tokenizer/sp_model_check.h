// Checks a serialized SentencePiece ModelProto for what libsentencepiece
// does not report as an error. Its trie builder (darts-clone, inside the
// shared library) throws its own exception type, not og::Error and not a
// status, on a piece that is empty or holds a NUL byte ("failed to insert
// key: zero-length key", naming neither file nor piece). So such a file is
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
