// A SentencePiece model whose pieces libsentencepiece's trie builder cannot
// take (empty, or with a NUL byte) is an og::Error naming the file, not an
// abort inside the library; real models still load.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "tokenizer/loaders.h"
#include "tokenizer/sp_model_check.h"

namespace og {
namespace {

const std::string kModel = std::string(OG_TESTDATA_DIR) + "/models/stories260K/tok512.model";

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing test data: " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One SentencePiece message as field 1 of a ModelProto: piece (field 1,
// omitted when null), score 0 (field 2), type NORMAL (field 3).
std::string piece_field(const char* piece, size_t len) {
  std::string msg;
  if (piece) msg += '\x0a' + std::string(1, static_cast<char>(len)) + std::string(piece, len);
  msg += std::string("\x15\x00\x00\x00\x00\x18\x01", 7);
  return '\x0a' + std::string(1, static_cast<char>(msg.size())) + msg;
}

void expect_rejected(const std::string& bytes) {
  try {
    tok::load_sentencepiece_bytes(bytes, "bad.model");
    FAIL() << "loaded a model libsentencepiece would abort on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.model"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NUL"), std::string::npos) << e.what();
  }
}

TEST(SentencePieceCheck, RealModelPasses) {
  const std::string bytes = read_bytes(kModel);
  ASSERT_FALSE(bytes.empty());
  EXPECT_NO_THROW(tok::check_sentencepiece_pieces(bytes, kModel));
  EXPECT_NO_THROW(tok::load_sentencepiece_bytes(bytes, kModel));
}

TEST(SentencePieceCheck, PieceWithNulIsAnError) {
  std::string bytes = read_bytes(kModel);
  const size_t at = bytes.find("<0x41>");  // a byte piece, length kept
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = '\0';
  expect_rejected(bytes);
}

TEST(SentencePieceCheck, EmptyOrMissingPieceIsAnError) {
  const std::string unk = piece_field("<unk>", 5);
  expect_rejected(unk + piece_field("", 0));
  expect_rejected(unk + piece_field(nullptr, 0));
  expect_rejected(unk + piece_field("a\0b", 3));
}

TEST(SentencePieceCheck, FuzzerFindingIsAnError) {
  // The input that aborted the fuzzer (piece "\0qs>").
  const std::string bytes(
      "\x0a\x0e\x0a\x05\x3c\x75\x6e\x6b\x3e\x15\x00\x00\x00\x00\x18\x02\x0a\x0c\x0a\x03\x3c\x73\x3e\x15"
      "\x00\x00\x80\x00\x10\x03\x0a\x0d\x0a\x04\x00\x71\x73\x3e\x15\x00\x00\x3c\x30\x78\x37\x32\x3e\x15"
      "\x00\x00\x00\x3c\x30\x78\x30\x34\x3e\x66\x66\x66\x26\x66\x66\x66\x66\x66\x18\x00\x00\x00\x18\x06"
      "\x0a\x0f\x0a\x06\x3c\x30\x78\x32\x34\x3e\x15\x00\x00\x00\x00\x18\x06\x0a\x0f\x0a\x06\x3c\x30\x78"
      "\x32\x35\x3e\x15\x02\x0e\x35\x3e\x15\x02\x0e\x20\x3c\x30\x78\x18\x01",
      113);
  expect_rejected(bytes);
}

TEST(SentencePieceCheck, GroupInsideAPieceIsSkippedAsProtobufDoes) {
  // The second fuzzer finding: a piece message holding an empty group
  // (field 14, tags 0x73 0x74) after its NUL-holding piece. The walk used
  // to give up on the group and pass the piece on to the trie builder.
  const std::string bytes = std::string("\x0a\x0e\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02", 16) +
                            std::string("\x0a\x0c\x0a\x03\x00\xa4>\x15\x00\x00\x80\x81st", 14) +
                            piece_field("\xe2\x96\x81up", 5);
  expect_rejected(bytes);
  // The same group in a good piece: skipped by both walks, the model loads.
  std::string good = read_bytes(kModel);
  const std::string needle = std::string("\x0a\x06<0x41>", 8);
  const size_t at = good.find(needle);
  ASSERT_NE(at, std::string::npos);
  ASSERT_GE(at, 1u);
  // The enclosing SentencePiece message's length byte precedes the piece.
  const auto len = static_cast<unsigned char>(good[at - 1]);
  ASSERT_LT(len, 125u);
  good[at - 1] = static_cast<char>(len + 2);
  good.insert(at + needle.size(), "st");
  EXPECT_NO_THROW(tok::check_sentencepiece_pieces(good, kModel));
  auto tok = tok::load_sentencepiece_bytes(good, kModel);
  EXPECT_EQ(tok->n_vocab(), tok::load_sentencepiece_bytes(read_bytes(kModel), kModel)->n_vocab());
}

TEST(SentencePieceCheck, MalformedBytesAreAnError) {
  // Truncated length, an end tag without a start, field number 0, a group
  // without its end, groups nested past protobuf's depth limit: each is a
  // one-line og::Error naming the file, never handed to the library.
  std::string deep;
  for (int i = 0; i < 101; ++i) deep += '\x73';
  for (int i = 0; i < 101; ++i) deep += '\x74';
  for (const std::string& bad : {std::string("\x0a\xff\xff", 3), std::string("\x74", 1), std::string("\x02\x00", 2),
                                  std::string("\x73\x08\x01", 3), deep,
                                  piece_field("<unk>", 5) + std::string("\x0a\x03\x0a\x05x", 5)}) {
    try {
      tok::load_sentencepiece_bytes(bad, "bad.model");
      ADD_FAILURE() << "loaded malformed bytes";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("bad.model"), std::string::npos) << what;
      EXPECT_NE(what.find("malformed"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace og
