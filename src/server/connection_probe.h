// Finding the socket of the connection a request came on, and asking whether
// its client has gone. The HTTP library hands handlers the connection's
// addresses but not its socket; a whole (non-streamed) reply is written only
// when generation ends, so without this a client that leaves would hold its
// place in the batch until max_tokens. Linux only (/proc/self/fd).
#pragma once

#include <string>

namespace og::server {

// The socket of this process whose local end is local_addr:local_port and
// whose peer is remote_addr:remote_port (numeric hosts as getnameinfo writes
// them), or -1 when none is. The caller must be the one keeping that
// connection open while it uses the descriptor (the handler of its request):
// otherwise the number could be closed and reused.
int find_connection_socket(const std::string& local_addr, int local_port, const std::string& remote_addr,
                           int remote_port);

// True when the peer closed the connection (end of stream or a socket error)
// or it hung up; false while it is open, also when it sent more bytes. Never
// blocks and never consumes what the peer sent.
bool peer_closed(int fd);

}  // namespace og::server
