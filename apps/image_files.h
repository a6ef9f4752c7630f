// Image files given to the commands (run --image, chat's /image): read whole
// (at most kMaxImageBytes), then encoded through the run's vision tower once
// (an ImageCache, so a render that holds the image again does not run the
// tower again). Every failure is one og::Error naming the file.
#pragma once

#include <string>
#include <vector>

#include "runtime/chat_images.h"
#include "runtime/run_setup.h"

namespace og::app {

// The file's bytes; og::Error "<what> FILE: ..." when it cannot be read, is
// larger than kMaxImageBytes or empty.
std::string read_image_file(const std::string& path, const std::string& what);

// Reads and encodes each file through l.vision into `cache` (their bytes in
// order, for the request's image parts). og::Error naming the file: the model
// has no tower ("this model has no vision tower (pass --mmproj FILE)"), or the
// image does not decode.
std::vector<std::string> load_images(const std::vector<std::string>& paths, const LoadedModel& l, ImageCache& cache,
                                     const std::string& what);

}  // namespace og::app
