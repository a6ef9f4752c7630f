// Asking whether a connection's client has gone, without reading from it: a
// whole (non-streamed) reply is written only when generation ends, and a
// stream may wait between pieces, so without this a client that leaves would
// hold its place in the batch until max_tokens. The worker that answers a
// request owns its socket for that time, so it probes the descriptor itself.
#pragma once

namespace og::server {

// True when the peer closed the connection (end of stream or a socket error)
// or it hung up; false while it is open, also when it sent more bytes. Never
// blocks and never consumes what the peer sent.
bool peer_closed(int fd);

}  // namespace og::server
