// Why a start-up step failed, and the exit code that says so.
#pragma once

#include <boost/system/result.hpp>
#include <string>

namespace ticketd {

/// The line Daemon::run() logs and the code it exits with: 2 when the config asks for something
/// that cannot work (a Snowflake layout or worker ID), 1 for everything else (storage, sockets,
/// etcd).
struct StartupError {
  int exit_code = 1;
  std::string message;
};

template <class T>
using StartupResult = boost::system::result<T, StartupError>;

}  // namespace ticketd
