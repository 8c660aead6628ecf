// A small synchronous HTTP/1.1 client for ticketd's JSON API (the restride command's only I/O).
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <string_view>

#include "server/base/result.h"

namespace ticketd::restride {

/// One answer: the status code and the body parsed as JSON (null when it is empty or not JSON).
struct JsonResponse {
  unsigned status = 0;
  boost::json::value body;
};

/// Talks to one ticketd's HTTP API at "host:port" (plain HTTP), one connection per request,
/// with a bearer token when one is given. Every request has a deadline. Not shared between
/// threads.
class JsonHttpClient {
 public:
  JsonHttpClient(std::string server, std::string token,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// `method` is "GET", "PUT" or "PATCH"; `body` is sent as JSON when not null. Errors are
  /// connection failures and timeouts (kStorageFailed-free: a plain Error with the cause).
  [[nodiscard]] DetailedResult<JsonResponse> request(std::string_view method,
                                                     const std::string& target,
                                                     const boost::json::value& body = nullptr);
  [[nodiscard]] const std::string& server() const { return server_; }

 private:
  std::string server_;
  std::string host_;
  std::string port_;
  std::string token_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ticketd::restride
