// serve --allow-image-urls (docs/serving.md "Images"): an image_url part's
// http:// URL fetched by the server, bounded in bytes and time. Plain HTTP
// only: no TLS library is linked, so an https:// URL stays a 400. Off by
// default: a server that fetches what clients name can be pointed at hosts
// its clients cannot reach.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace og::server {

struct ImageUrlFetch {
  bool allowed = false;                   // --allow-image-urls
  int64_t max_bytes = int64_t{32} << 20;  // the body's bound (chat/content_part.h kMaxImageBytes)
  double timeout_s = 10;                  // connect, send and read together
};

// The process's setting (serve sets it once at start, before any request).
void set_image_url_fetch(const ImageUrlFetch& f);
ImageUrlFetch image_url_fetch();

// The body of a GET of `url` (http://host[:port][/path]), one HTTP/1.0
// request, no redirects followed. og::Error with one line on an https or
// malformed URL, a host that does not resolve or connect, a status other than
// 200, a body past f.max_bytes, or time past f.timeout_s.
std::string fetch_image_url(std::string_view url, const ImageUrlFetch& f);

}  // namespace og::server
