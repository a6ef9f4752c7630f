// The HTTP request-head parser and the chunked-body decoder on their own:
// heads that arrive in pieces, framing and connection headers, the refusals
// (with their statuses), and chunked bodies fed a byte at a time.
#include <gtest/gtest.h>

#include "server/http_parser.h"

namespace og::server {
namespace {

HeadParse parse(const std::string& s, HttpRequest* r, size_t max = 8192) { return parse_request_head(s, max, r); }

TEST(HttpParser, HeadArrivingInPieces) {
  const std::string head = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type:  application/json \r\n"
                           "Content-Length: 12\r\n\r\n{\"prompt\":1}";
  HttpRequest r;
  for (size_t n = 0; n < head.size() - 12 - 1; ++n)
    EXPECT_EQ(parse(head.substr(0, n), &r).status, ParseStatus::kIncomplete) << n;
  const HeadParse p = parse(head, &r);
  ASSERT_EQ(p.status, ParseStatus::kDone) << p.error;
  EXPECT_EQ(p.consumed, head.size() - 12);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/v1/completions");
  EXPECT_EQ(r.query, "x=1");
  EXPECT_EQ(r.header_value("content-type"), "application/json");
  EXPECT_EQ(r.content_length, 12);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_TRUE(r.has_body());
}

TEST(HttpParser, ConnectionAndVersion) {
  HttpRequest r;
  ASSERT_EQ(parse("GET / HTTP/1.0\r\n\r\n", &r).status, ParseStatus::kDone);
  EXPECT_FALSE(r.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r).status, ParseStatus::kDone);
  EXPECT_TRUE(r.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &r).status, ParseStatus::kDone);
  EXPECT_FALSE(r.keep_alive);
  ASSERT_EQ(parse("\r\nGET /health HTTP/1.1\nHost: x\n\n", &r).status, ParseStatus::kDone);  // bare LF, blank line first
  EXPECT_EQ(r.path, "/health");
  ASSERT_EQ(parse("GET http://host:8080/ready?a HTTP/1.1\r\n\r\n", &r).status, ParseStatus::kDone);
  EXPECT_EQ(r.path, "/ready");
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nExpect: 100-continue\r\n\r\n", &r).status,
            ParseStatus::kDone);
  EXPECT_TRUE(r.chunked);
  EXPECT_TRUE(r.expect_continue);
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", &r).status, ParseStatus::kDone);
  EXPECT_EQ(r.content_length, HttpRequest::kHugeLength);
}

TEST(HttpParser, Refusals) {
  const struct {
    std::string head;
    int status;
  } cases[] = {
      {"GET\r\n\r\n", 400},
      {"GET /  HTTP/1.1\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET nopath HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / HTTP/1.1\r\nNo colon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417},
  };
  for (const auto& c : cases) {
    HttpRequest r;
    const HeadParse p = parse(c.head, &r);
    EXPECT_EQ(p.status, ParseStatus::kError) << c.head;
    EXPECT_EQ(p.error_status, c.status) << c.head << ": " << p.error;
    EXPECT_EQ(p.error.find('\n'), std::string::npos);
  }
  HttpRequest r;
  const HeadParse big = parse("GET / HTTP/1.1\r\nX: " + std::string(200, 'a'), &r, 100);
  EXPECT_EQ(big.status, ParseStatus::kError);
  EXPECT_EQ(big.error_status, 431);
}

TEST(HttpParser, ChunkedBodyByteAtATime) {
  const std::string body = "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  ChunkedDecoder d;
  std::string in, out;
  ChunkedDecoder::Status s = ChunkedDecoder::Status::kNeedMore;
  size_t fed = 0;
  while (s == ChunkedDecoder::Status::kNeedMore && fed < body.size()) {
    in += body[fed++];
    size_t pos = 0;
    s = d.feed(in, &pos, &out, 1000);
    in.erase(0, pos);
  }
  ASSERT_EQ(s, ChunkedDecoder::Status::kDone) << d.error();
  EXPECT_EQ(out, "Wikipedia in\r\n\r\nchunks.");
  EXPECT_EQ(body.substr(fed), "NEXT");  // the next request's bytes are not taken
}

TEST(HttpParser, ChunkedRefusals) {
  auto run = [](const std::string& body, int64_t max) {
    ChunkedDecoder d;
    std::string out;
    size_t pos = 0;
    return d.feed(body, &pos, &out, max);
  };
  EXPECT_EQ(run("zz\r\n", 100), ChunkedDecoder::Status::kError);
  EXPECT_EQ(run("3\r\nabcd\r\n", 100), ChunkedDecoder::Status::kError);
  EXPECT_EQ(run("ffffffffffffffff\r\n", 100), ChunkedDecoder::Status::kError);
  EXPECT_EQ(run("65\r\n", 100), ChunkedDecoder::Status::kTooLarge);  // 101 bytes declared
  EXPECT_EQ(run("40\r\n" + std::string(64, 'a') + "\r\n40\r\n", 100), ChunkedDecoder::Status::kTooLarge);
  EXPECT_EQ(run(std::string(2000, '1'), 100), ChunkedDecoder::Status::kError);  // a size line that never ends
}

}  // namespace
}  // namespace og::server
