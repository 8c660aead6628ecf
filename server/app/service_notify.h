// Start-up and shutdown notices to the service manager (systemd's Type=notify, sd_notify(3)).
#pragma once

namespace ticketd {

/// READY=1: every listener is bound and accepting. With storage.engine etcd this is sent by a
/// follower too ("up", not "leading"): a standby may wait for the leadership indefinitely, and
/// systemd would otherwise fail its start after TimeoutStartSec. /readyz says who leads.
/// A no-op when NOTIFY_SOCKET is unset (not started by systemd, or by a test that does not
/// listen). NOTIFY_SOCKET is left in the environment, so a deposed leader re-executed as a
/// follower notifies READY=1 again on the same socket. Thread safety: callable from any thread.
void notify_ready();

/// RELOADING=1: a reload (SIGHUP) has begun; notify_ready() follows when it ended, applied or not.
void notify_reloading();

/// STOPPING=1: shutdown has begun (a SIGTERM or SIGINT); the process exits once in-flight work
/// is done. Not sent when a deposed etcd leader re-executes itself: the service keeps running.
void notify_stopping();

}  // namespace ticketd
