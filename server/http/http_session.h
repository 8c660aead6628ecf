// One HTTP/1.1 connection: reads requests, hands them to handle_request, writes responses.
#pragma once

#include "server/http/routes.h"
#include "server/net/asio_support.h"

namespace ticketd::http {

/// Serves one connection until the peer closes it, a deadline passes, an unrecoverable request
/// error is answered, or the registry stops. Keep-alive and pipelining: requests are answered
/// strictly in order, one at a time. Every read has a deadline (idle_timeout while waiting for
/// a request, read_timeout once one started; writes get read_timeout too). Header and body
/// limits answer 431 / 413 and close. Only does I/O: what to answer is handle_request's job.
///
/// Spawn it on a strand (the listener's accepted sockets already carry one), e.g.
///   co_spawn(socket.get_executor(), run_http_session(std::move(socket), deps),
///            net::log_on_exit("http"));
/// `deps` must outlive the session. Registers itself in deps.sessions (cancel posts to its strand).
net::asio::awaitable<void> run_http_session(net::tcp::socket socket, HttpDeps& deps);

}  // namespace ticketd::http
