// The model fingerprint: what identifies a model's weights cheaply enough to
// compute at every start (the prefix cache's disk tier keys its files by it,
// so a file written by another model is never read as this one's).
#pragma once

#include <string>

#include "base/sha256.h"

namespace og {

// SHA-256 over, for a model file (or each regular file of an HF directory, by
// name order): its name within the directory (none for a single file), its
// size, its first 4 MiB (a GGUF's header and metadata; config.json whole),
// 64 samples of 64 KiB at evenly spaced offsets and its last 64 KiB; at most
// ~8.2 MiB read per file. Two files equal in all of those bytes count as the
// same model: a fine-tune differs in nearly every weight block, so the samples
// tell them apart, but an edit confined to bytes no sample reads would not be
// seen (documented in docs/cache.md). Throws og::Error naming an unreadable path.
Sha256Digest model_fingerprint(const std::string& path);

}  // namespace og
