// Atomic output files: a file is written under a temporary name in the same
// directory and renamed onto its final name only when complete, so an
// interrupted run or a full disk never leaves a truncated file under the final
// name. A fatal signal (SIGINT, SIGTERM, SIGHUP) removes the temporary file of
// the output being written before the process dies; a program that handles
// the signal itself keeps its handler (and the destructor removes the file).
#pragma once

#include <string>

namespace og {

class AtomicOutput {
 public:
  // Checks the destination: its directory must exist; an existing file is an
  // og::Error unless `overwrite`. A destination that exists and is not a
  // regular file (a device such as /dev/full or /dev/null) is written in
  // place: there is nothing to rename onto it.
  AtomicOutput(const std::string& final_path, bool overwrite);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  // Where to write: the temporary path (or the device itself).
  const std::string& path() const { return write_path_; }
  bool in_place() const { return in_place_; }
  // fsyncs the written file and renames it onto the final path.
  void commit();

 private:
  std::string final_, write_path_;
  bool in_place_ = false, committed_ = false;
};

}  // namespace og
