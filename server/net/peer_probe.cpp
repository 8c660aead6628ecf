#include "server/net/peer_probe.h"

#include <sys/socket.h>

#include <cerrno>

namespace ticketd::net {

bool peer_closed(int fd) {
  char byte = 0;
  const auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace ticketd::net
