// Read-only memory mapping of a whole file (model weights are never copied
// unless a kernel wants a repacked layout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace og {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws og::Error naming the path when it cannot be opened or mapped.
  // An empty file maps to size() == 0 and data() == nullptr.
  static MappedFile open(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Reads a whole (small) file into a string; throws og::Error naming the path.
std::string read_text_file(const std::string& path);
// Reads file descriptor `fd` to its end (stdin: fd 0); a read error (e.g.
// stdin redirected from a directory) is an og::Error naming `name`.
std::string read_fd_to_end(int fd, const std::string& name);
// An og::Error naming `name` when `fd` is a directory (reads from it would fail
// with EISDIR, which line readers take for the end of input).
void check_fd_readable(int fd, const std::string& name);
bool file_exists(const std::string& path);
// The name exists in its directory, even as a dangling or looping symlink
// (whose open then fails with the real reason instead of "no such file").
bool entry_exists(const std::string& path);
bool is_directory(const std::string& path);

}  // namespace og
