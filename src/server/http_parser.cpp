// Request-head and chunked-body parsing (RFC 9112), strict where leniency
// lets two parsers disagree about where a request ends (both Content-Length
// and Transfer-Encoding, differing lengths, folded lines: all refused) and
// lenient where it costs nothing (bare LF line ends, leading blank lines).
#include "server/http_parser.h"

#include <algorithm>

namespace og::server {

namespace {

constexpr size_t kMaxHeaders = 100;
constexpr size_t kMaxChunkLine = 1024;     // chunk size + extensions
constexpr size_t kMaxTrailerBytes = 8192;  // all trailer lines together

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Client bytes quoted for an error message: printable ASCII only, cut short.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 48; ++i) {
    const char c = s[i];
    out += (c >= 0x20 && c < 0x7F && c != '\'') ? c : '?';
  }
  return out + (s.size() > 48 ? "...'" : "'");
}

HeadParse head_error(int status, std::string message) {
  HeadParse p;
  p.status = ParseStatus::kError;
  p.error_status = status;
  p.error = std::move(message);
  return p;
}

// The next line of buf from *at (its end without CR/LF), advancing *at past
// the LF; false when no LF has arrived yet.
bool next_line(std::string_view buf, size_t* at, std::string_view* line) {
  const size_t nl = buf.find('\n', *at);
  if (nl == std::string_view::npos) return false;
  size_t end = nl;
  if (end > *at && buf[end - 1] == '\r') --end;
  *line = buf.substr(*at, end - *at);
  *at = nl + 1;
  return true;
}

// "METHOD SP target SP HTTP/1.x"; "" when it is well formed, else the message.
std::string parse_request_line(std::string_view line, HttpRequest* req, int* status) {
  *status = 400;
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return "malformed request line " + quoted(line);
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!is_token(method)) return "malformed method " + quoted(method);
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/") return "malformed HTTP version " + quoted(version);
  if (version.substr(5) != "1.1" && version.substr(5) != "1.0") {
    *status = 505;
    return "HTTP version " + quoted(version) + " is not supported (HTTP/1.0 and 1.1 are)";
  }
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F) return "malformed request target " + quoted(target);
  std::string_view t = target;
  // Absolute form (what a proxy is sent): the path is what follows the authority.
  if (t.substr(0, 7) == "http://" || t.substr(0, 8) == "https://") {
    const size_t slash = t.find('/', t.find("//") + 2);
    t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
  }
  if (t.empty() || (t[0] != '/' && t != "*")) return "malformed request target " + quoted(target);
  req->method = method;
  req->target = t;
  const size_t q = t.find('?');
  req->path = t.substr(0, q);
  req->query = q == std::string_view::npos ? "" : t.substr(q + 1);
  req->version_minor = version[7] - '0';
  return "";
}

// Applies the headers that decide framing and the connection; "" or the message.
std::string apply_framing(HttpRequest* req, int* status) {
  *status = 400;
  bool have_length = false;
  std::string te;
  bool close = false, keep = false;
  for (const auto& [name, value] : req->headers) {
    if (name == "content-length") {
      const bool numeric = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      if (!numeric) return "bad Content-Length header: " + quoted(value);
      const int64_t n = value.size() > 18 ? HttpRequest::kHugeLength : std::stoll(value);
      if (have_length && n != req->content_length) return "conflicting Content-Length headers";
      have_length = true;
      req->content_length = n;
    } else if (name == "transfer-encoding") {
      te += (te.empty() ? "" : ",") + lower(value);
    } else if (name == "connection") {
      const std::string v = lower(value);
      close = close || v.find("close") != std::string::npos;
      keep = keep || v.find("keep-alive") != std::string::npos;
    } else if (name == "expect") {
      if (lower(value) != "100-continue") {
        *status = 417;
        return "unsupported Expect header " + quoted(value);
      }
      req->expect_continue = true;
    }
  }
  if (!te.empty()) {
    if (have_length) return "both Content-Length and Transfer-Encoding are set";
    if (trim(te) != "chunked") {
      *status = 501;
      return "Transfer-Encoding " + quoted(te) + " is not supported (only chunked is)";
    }
    req->chunked = true;
  }
  req->keep_alive = req->version_minor >= 1 ? !close : keep && !close;
  return "";
}

}  // namespace

const std::string* HttpRequest::header(std::string_view lower_name) const {
  for (const auto& h : headers)
    if (h.first == lower_name) return &h.second;
  return nullptr;
}

std::string HttpRequest::header_value(std::string_view lower_name) const {
  const std::string* v = header(lower_name);
  return v ? *v : std::string();
}

HeadParse parse_request_head(std::string_view buf, size_t max_head_bytes, HttpRequest* req) {
  *req = HttpRequest();
  const std::string_view limited = buf.substr(0, std::min(buf.size(), max_head_bytes));
  auto incomplete = [&] {
    if (buf.size() >= max_head_bytes)
      return head_error(431, "the request head is over " + std::to_string(max_head_bytes) + " bytes");
    return HeadParse();
  };
  size_t at = 0;
  std::string_view line;
  do {
    if (!next_line(limited, &at, &line)) return incomplete();
  } while (line.empty() && at <= 64);  // a few stray blank lines between requests
  if (line.empty()) return head_error(400, "blank lines instead of a request line");
  int status = 400;
  std::string err = parse_request_line(line, req, &status);
  if (!err.empty()) return head_error(status, err);
  while (true) {
    if (!next_line(limited, &at, &line)) return incomplete();
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') return head_error(400, "folded header lines are not accepted");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return head_error(400, "malformed header line " + quoted(line));
    const std::string_view value = trim(line.substr(colon + 1));
    for (char c : value)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7F)
        return head_error(400, "control character in header " + quoted(line.substr(0, colon)));
    if (req->headers.size() >= kMaxHeaders)
      return head_error(431, "more than " + std::to_string(kMaxHeaders) + " header lines");
    req->headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
  err = apply_framing(req, &status);
  if (!err.empty()) return head_error(status, err);
  HeadParse p;
  p.status = ParseStatus::kDone;
  p.consumed = at;
  return p;
}

ChunkedDecoder::Status ChunkedDecoder::fail(std::string message) {
  error_ = std::move(message);
  return Status::kError;
}

ChunkedDecoder::Status ChunkedDecoder::feed(std::string_view in, size_t* pos, std::string* out, int64_t max_bytes) {
  while (true) {
    std::string_view line;
    size_t at = *pos;
    switch (state_) {
      case State::kDone:
        return Status::kDone;
      case State::kSize: {
        if (!next_line(in, &at, &line)) {
          if (in.size() - *pos > kMaxChunkLine) return fail("a chunk-size line is too long");
          return Status::kNeedMore;
        }
        if (line.size() > kMaxChunkLine) return fail("a chunk-size line is too long");
        const std::string_view digits = trim(line.substr(0, line.find(';')));
        if (digits.empty() || digits.size() > 15 || digits.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
          return fail("malformed chunk size " + quoted(line));
        remaining_ = std::stoull(std::string(digits), nullptr, 16);
        *pos = at;
        if (remaining_ == 0) {
          state_ = State::kTrailer;
        } else {
          if (static_cast<int64_t>(out->size() + remaining_) > max_bytes) return Status::kTooLarge;
          state_ = State::kData;
        }
        break;
      }
      case State::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - *pos));
        out->append(in.substr(*pos, n));
        *pos += n;
        remaining_ -= n;
        if (remaining_ > 0) return Status::kNeedMore;
        state_ = State::kDataEnd;
        break;
      }
      case State::kDataEnd:
        if (!next_line(in, &at, &line)) {
          if (in.size() - *pos >= 2) return fail("a chunk is longer than its size says");
          return Status::kNeedMore;
        }
        if (!line.empty()) return fail("a chunk is longer than its size says");
        *pos = at;
        state_ = State::kSize;
        break;
      case State::kTrailer:
        if (!next_line(in, &at, &line)) {
          if (trailer_bytes_ + (in.size() - *pos) > kMaxTrailerBytes) return fail("the chunked trailer is too long");
          return Status::kNeedMore;
        }
        trailer_bytes_ += at - *pos;
        if (trailer_bytes_ > kMaxTrailerBytes) return fail("the chunked trailer is too long");
        *pos = at;
        if (line.empty()) state_ = State::kDone;
        break;
    }
  }
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

}  // namespace og::server
