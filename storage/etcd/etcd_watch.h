// A streaming watch through the etcd v3 JSON gateway (POST /v3/watch).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "server/base/result.h"
#include "storage/etcd/etcd_codec.h"
#include "storage/etcd/etcd_errc.h"

namespace ticketd::etcd {

/// One watch: a long-lived HTTP/1.1 response whose chunked body carries one JSON message per
/// line ({"result": WatchResponse}). Made by EtcdClient::watch() on a connection and an
/// io_context of its own, so a blocked next() never holds up the client's calls.
///
/// next() waits for the next message with a deadline. Any failure ends the stream for good
/// (beast closes the socket when a deadline passes): the owner opens a new watch, from the
/// revision after the last one it saw, so no event is missed (unless etcd compacted it: the new
/// watch then comes back canceled with compact_revision set, and the owner re-reads the state).
/// Thread safety: next() from one thread at a time; cancel() from any thread, at any time.
class EtcdWatch {
 public:
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  /// The next message within `wait`. Errors: kTimeout (none came in time), kUnavailable (the
  /// stream broke or ended), kTls, kAuth (etcd refused the token: the client forgets it, so the
  /// next watch authenticates again), kRejected, kBadResponse, kCancelled (after cancel()).
  [[nodiscard]] DetailedResult<WatchResponse> next(std::chrono::milliseconds wait);

  /// Ends a next() in progress (it returns kCancelled at once) and every later one, by closing
  /// the socket on the watch's own io_context.
  void cancel();

  /// "https://HOST:PORT" of the member this watch streams from.
  [[nodiscard]] const std::string& endpoint() const;

 private:
  friend class EtcdClient;
  struct State;
  explicit EtcdWatch(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace ticketd::etcd
