// libFuzzer target: raw bytes as the server's event loop reads them off a
// socket. The request-head parser must accept or refuse them (a 4xx/5xx
// status and a one-line message) and what it accepts must be consistent
// (path from the target, lower-case header names, one framing); the bytes
// after an accepted head go through the chunked decoder both at once and
// split at points the input chooses, and the two must agree. Anything else
// (a crash, a disagreement, a body over its bound) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http_parser.h"

namespace {

using og::server::ChunkedDecoder;
using og::server::HeadParse;
using og::server::HttpRequest;
using og::server::ParseStatus;

constexpr size_t kMaxHead = 4096;
constexpr int64_t kMaxBody = 1 << 16;

void check_head(std::string_view in, const HeadParse& p, const HttpRequest& r) {
  if (p.status == ParseStatus::kError) {
    const int s = p.error_status;
    if (!(s == 400 || s == 417 || s == 431 || s == 501 || s == 505)) __builtin_trap();
    if (p.error.empty() || p.error.find('\n') != std::string::npos || p.error.size() > 512) __builtin_trap();
    return;
  }
  if (p.status == ParseStatus::kIncomplete) {
    if (in.size() >= kMaxHead) __builtin_trap();  // over the bound it must refuse, not wait
    return;
  }
  if (p.consumed == 0 || p.consumed > in.size() || p.consumed > kMaxHead) __builtin_trap();
  if (r.method.empty() || r.path.empty() || (r.path[0] != '/' && r.path != "*")) __builtin_trap();
  if (r.target.compare(0, r.path.size(), r.path) != 0) __builtin_trap();
  if (r.version_minor != 0 && r.version_minor != 1) __builtin_trap();
  if (r.chunked && r.content_length >= 0) __builtin_trap();
  if (r.content_length < -1) __builtin_trap();
  for (const auto& [name, value] : r.headers)
    for (char c : name)
      if (c >= 'A' && c <= 'Z') __builtin_trap();
}

// Decodes `body` in pieces cut at the given sizes; the status and the data.
ChunkedDecoder::Status decode(std::string_view body, std::string_view cuts, std::string* out) {
  ChunkedDecoder d;
  std::string buf;
  size_t fed = 0, ci = 0;
  ChunkedDecoder::Status s = ChunkedDecoder::Status::kNeedMore;
  while (true) {
    const size_t step = cuts.empty() ? body.size() : 1 + static_cast<unsigned char>(cuts[ci++ % cuts.size()]);
    const size_t n = std::min(step, body.size() - fed);
    buf.append(body.substr(fed, n));
    fed += n;
    size_t pos = 0;
    s = d.feed(buf, &pos, out, kMaxBody);
    if (pos > buf.size()) __builtin_trap();
    buf.erase(0, pos);
    if (s != ChunkedDecoder::Status::kNeedMore || fed == body.size()) return s;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The first byte says how many following bytes choose the cut points.
  const size_t n_cuts = std::min<size_t>(data[0] % 8, size - 1);
  const std::string_view cuts(reinterpret_cast<const char*>(data) + 1, n_cuts);
  const std::string_view in(reinterpret_cast<const char*>(data) + 1 + n_cuts, size - 1 - n_cuts);
  HttpRequest req;
  const HeadParse p = og::server::parse_request_head(in, kMaxHead, &req);
  check_head(in, p, req);
  if (p.status != ParseStatus::kDone) return 0;
  const std::string_view body = in.substr(p.consumed);
  std::string whole, pieces;
  const ChunkedDecoder::Status a = decode(body, "", &whole);
  const ChunkedDecoder::Status b = decode(body, cuts, &pieces);
  if (static_cast<int64_t>(whole.size()) > kMaxBody || static_cast<int64_t>(pieces.size()) > kMaxBody) __builtin_trap();
  // Cut anywhere, the same bytes decode the same way (an error may show
  // earlier or later only as "need more" versus "error" at the very end).
  if (a == ChunkedDecoder::Status::kDone || b == ChunkedDecoder::Status::kDone) {
    if (a != b || whole != pieces) __builtin_trap();
  }
  return 0;
}
