// Asio vocabulary shared by the front ends' sessions and the listener.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <string>

#include "server/base/log.h"

namespace ticketd::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

/// Completion token for awaited operations whose failure is an ordinary event (EOF, reset,
/// timeout): the error comes back as a value, not an exception.
constexpr auto use_nothrow = asio::as_tuple(asio::use_awaitable);

/// Completion handler for co_spawn: logs an escaped exception (a bug) instead of losing it.
inline auto log_on_exit(std::string what) {
  return [what = std::move(what)](const std::exception_ptr& e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      log::error(what + ": session ended by exception: " + ex.what());
    }
  };
}

}  // namespace ticketd::net
