// The scheduler's handling of a request's images (docs/vision.md, "Images
// through the scheduler"), kept out of scheduler.cpp: checking them at
// submit, the spans the prefix cache keys blocks by, a session's history
// with them (the part a prefix-cache hit gave, then the rest appended
// pending), and keeping speculation's drafts out of image placeholders.
// Internal to the scheduler (stepping thread, except check at submit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/image_span.h"
#include "runtime/scheduler.h"
#include "runtime/session.h"
#include "runtime/spec/proposer.h"

namespace og::sched_images {

// Why the request's images cannot run ("" when they can): a missing or empty
// image, rows not whole, a width other than `width` (when > 0), spans
// unsorted, overlapping or past the prompt, a prompt position inside an
// image that does not hold its placeholder, an image longer than `max_write`
// (it is forwarded whole in one step), prompt logprobs with images.
std::string check(const RequestOptions& r, int64_t max_write, int64_t width);

// The prompt's image spans (empty for a text-only request).
std::vector<ImageSpan> spans(const RequestOptions& r);

// The images among the prompt's first `head` positions (a prefix-cache hit
// never ends inside one), as the session's history keeps them.
std::vector<SessionImage> head_images(const RequestOptions& r, int64_t head);

// Appends to `s` (whose history is the prompt's first `head` positions) the
// prompt up to its last image's end, pending: text as tokens, images as
// embedding rows. Returns where the rest of the prompt (the turn's own
// prompt) starts: `head` when no image lies past it.
int64_t append_pending(Session& s, const RequestOptions& r, int64_t head);

// The rows of the image that starts at prompt position `pos`, 0 when none does.
int64_t image_rows_at(const RequestOptions& r, int64_t pos);

// Cuts `d` before its first image placeholder of `r`: a prompt-lookup match
// over an image's run of placeholders would propose them as text.
void cut_draft(Draft& d, const RequestOptions& r);

}  // namespace og::sched_images
