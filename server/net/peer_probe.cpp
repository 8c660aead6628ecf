#include "server/net/peer_probe.h"

#include <sys/socket.h>

#include <cerrno>

namespace ticketd::net {

PeerState peer_state(int fd) {
  char byte = 0;
  const auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return PeerState::kBytes;
  if (n == 0) return PeerState::kGone;
  const bool idle = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  return idle ? PeerState::kIdle : PeerState::kGone;
}

bool peer_closed(int fd) { return peer_state(fd) == PeerState::kGone; }

}  // namespace ticketd::net
