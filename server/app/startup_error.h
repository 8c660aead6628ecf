// Why a start-up step failed, and the exit code that says so.
#pragma once

#include <boost/system/result.hpp>
#include <string>

#include "server/base/exit_code.h"

namespace ticketd {

/// The line Daemon::run() logs and the status it exits with: kRefused when the config asks for
/// something that cannot work (a Snowflake layout or worker ID, a TLS file), kFailed for
/// everything else (storage, sockets, etcd).
struct StartupError {
  ExitCode exit_code = ExitCode::kFailed;
  std::string message;
};

template <class T>
using StartupResult = boost::system::result<T, StartupError>;

}  // namespace ticketd
