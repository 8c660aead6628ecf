#include "server/app/service_notify.h"

#include <systemd/sd-daemon.h>

#include <cstring>
#include <string>

#include "server/base/log.h"

namespace ticketd {

namespace {

void notify(const char* state) {
  // unset_environment = 0: a re-executed follower (main.cpp's execv) must find NOTIFY_SOCKET.
  const int rc = sd_notify(0, state);
  if (rc < 0) {
    // A supervisor that cannot be told is not a reason to stop serving; it will time out.
    log::warn(std::string("sd_notify(") + state + ") failed: " + std::strerror(-rc));
  }
}

}  // namespace

void notify_ready() { notify("READY=1"); }

void notify_reloading() { notify("RELOADING=1"); }

void notify_stopping() { notify("STOPPING=1"); }

}  // namespace ticketd
