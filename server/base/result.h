// Vocabulary shared by every target: Result<T> and helpers for project error enums.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>
#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>
#include <string>
#include <system_error>
#include <utility>

namespace ticketd {

/// Expected failures are values. A Result<T> holds either a T or an error_code from one of the
/// project's error enums (TicketErrc, StorageErrc, ProtocolErrc, HttpErrc, EtcdErrc, ...: each
/// one's category comes from server/base/error_category.h).
template <class T>
using Result = boost::system::result<T, boost::system::error_code>;

using ErrorCode = boost::system::error_code;

/// An error with a human message attached, for failures whose detail matters to the user
/// (a RocksDB status text, the sequence name that does not exist).
struct Error {
  ErrorCode code;
  std::string message;
};

template <class T>
using DetailedResult = boost::system::result<T, Error>;

/// Found by argument-dependent lookup when value() is called on a DetailedResult holding an
/// error (a bug): throws a system_error carrying the code and the message.
[[noreturn]] inline void throw_exception_from_error(const Error& e,
                                                    const boost::source_location& loc) {
  boost::throw_exception(boost::system::system_error(e.code, e.message), loc);
}

}  // namespace ticketd
