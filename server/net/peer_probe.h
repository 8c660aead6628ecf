// Whether the other end of a connection has gone, asked without reading anything.
#pragma once

namespace ticketd::net {

/// What a connected TCP socket's peer has done, seen without reading anything: nothing new
/// (kIdle), sent bytes that wait unread (kBytes), or closed or reset its end (kGone).
enum class PeerState { kIdle, kBytes, kGone };
[[nodiscard]] PeerState peer_state(int fd);

/// True when the peer of the connected TCP socket `fd` has closed its end (an orderly close
/// seen as end of file, or a reset), false while it is there: bytes waiting (its next command,
/// which stay unread) or none yet. Never blocks; TLS or not, it looks at the TCP socket.
/// A client that only shut down its sending side counts as gone.
[[nodiscard]] bool peer_closed(int fd);

}  // namespace ticketd::net
