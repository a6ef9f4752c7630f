// Image files for the commands (image_files.h).
#include "image_files.h"

#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"

namespace og::app {

std::string read_image_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxImageBytes)
    fail(what, " ", path, ": ", size, " bytes; an image file is at most ", kMaxImageBytes >> 20, " MiB");
  std::string bytes;
  try {
    bytes = read_text_file(path);
  } catch (const Error& e) {
    fail(what, " ", e.what());
  }
  OG_CHECK(bytes.size() <= kMaxImageBytes, what, " ", path, ": more than ", kMaxImageBytes >> 20, " MiB");
  OG_CHECK(!bytes.empty(), what, " ", path, ": the file is empty");
  return bytes;
}

std::vector<std::string> load_images(const std::vector<std::string>& paths, const LoadedModel& l, ImageCache& cache,
                                     const std::string& what) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::string bytes = read_image_file(p, what);
    if (!l.vision) fail(what, " ", p, ": ", kNoVisionTower);
    try {
      cache.get(bytes, *l.vision);
    } catch (const Error& e) {
      fail(what, " ", p, ": ", e.what());
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

}  // namespace og::app
