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
// empty or contains a NUL byte. Bytes that are not a well-formed protobuf
// message are left to libsentencepiece's own parser, which reports them.
void check_sentencepiece_pieces(std::string_view bytes, const std::string& path);

}  // namespace og::tok
