// HTTP/1.x request parsing for the server's own event loop: the request head
// (request line and headers, parsed from a buffer that may hold only part of
// it, so the loop can call again as bytes arrive) and chunked request bodies
// (decoded incrementally, bounded). Pure functions over bytes: no sockets, no
// allocation beyond the request's own strings; the fuzz target drives both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace og::server {

// One request as the routes see it.
struct HttpRequest {
  std::string method;  // as sent ("GET", "POST", ...; case-sensitive per RFC 9110)
  std::string target;  // the request target, origin form ("/v1/models?x=1")
  std::string path;    // target up to '?'
  std::string query;   // after '?', "" when none
  int version_minor = 1;  // HTTP/1.<version_minor>: 0 or 1
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  // Content-Length as declared: -1 when absent; kHugeLength when it has more
  // digits than int64 holds (always over any body limit).
  int64_t content_length = -1;
  bool chunked = false;          // Transfer-Encoding: chunked
  bool keep_alive = true;        // the client lets the connection serve another request
  bool expect_continue = false;  // Expect: 100-continue
  std::string body;              // filled by the connection once read (dechunked)
  // The server's own per-request state (request id, access-log fields), set
  // by ConnHandlers::begin once the head is read.
  std::shared_ptr<void> context;

  static constexpr int64_t kHugeLength = INT64_MAX;

  // The value of header `lower_name` (first occurrence), or nullptr.
  const std::string* header(std::string_view lower_name) const;
  // The value, "" when absent.
  std::string header_value(std::string_view lower_name) const;
  bool has_body() const { return chunked || content_length > 0; }
};

enum class ParseStatus { kIncomplete, kDone, kError };

struct HeadParse {
  ParseStatus status = ParseStatus::kIncomplete;
  size_t consumed = 0;   // kDone: bytes of the head (the body starts here)
  int error_status = 0;  // kError: 400, 431 (head too large), 501 (transfer coding), 505 (version)
  std::string error;     // kError: one line naming what is wrong
};

// Parses the head at the start of `buf` into *req (overwritten). kIncomplete
// while the blank line that ends it has not arrived and the head is within
// max_head_bytes; kError (431) once it is over that without ending. Lines may
// end in CRLF or LF; empty lines before the request line are skipped.
HeadParse parse_request_head(std::string_view buf, size_t max_head_bytes, HttpRequest* req);

// Decodes a chunked body as it arrives: feed() takes what is buffered from
// *pos on, appends the data to *out and advances *pos past what it used; a
// partial chunk-size line or chunk waits for more. Chunk extensions and
// trailers are read and dropped.
class ChunkedDecoder {
 public:
  enum class Status { kNeedMore, kDone, kError, kTooLarge };
  Status feed(std::string_view in, size_t* pos, std::string* out, int64_t max_bytes);
  const std::string& error() const { return error_; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  Status fail(std::string message);
  State state_ = State::kSize;
  uint64_t remaining_ = 0;  // bytes left of the current chunk
  size_t trailer_bytes_ = 0;
  std::string error_;
};

// "OK", "Not Found", ... for the status line ("Unknown" for others).
const char* reason_phrase(int status);

}  // namespace og::server
