// Images in the C API (c_api_images.cpp): a chat request's og_chat_image
// list into its messages' parts, and og_session_append_image's body.
#pragma once

#include "api/c_api_session.h"
#include "chat/chat_request.h"

namespace og::capi {

// Puts q's images into r's user messages as image parts (the content split
// at each image's offset), each checked and encoded through the session's
// model tower into its ImageCache first: OG_ERR_INVALID_ARGUMENT naming
// images[k] for a bad index, offset or image, or a model without a tower.
void add_chat_images(og_session* session, const og_chat_request& q, ChatRequest& r);

// Fills `to` (empty) with `from`'s history, forwarded: tokens as tokens, each
// image whole through Session::append_image with its rows and hash (a fork).
void copy_history(const Session& from, Session& to);

// og_session_append_image for a caller that holds the session.
void append_image_held(og_session* session, const uint8_t* data, size_t size);

}  // namespace og::capi
