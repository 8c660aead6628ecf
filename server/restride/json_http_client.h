// A small synchronous client for ticketd's JSON API (the restride command's only I/O), on the
// one HTTP connection class (net::HttpConnection) the etcd client uses too.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/net/http_connection.h"

namespace ticketd::restride {

/// One answer: the status code and the body parsed as JSON (null when it is empty or not JSON).
struct JsonResponse {
  unsigned status = 0;
  boost::json::value body;
};

/// Talks to one ticketd's HTTP API at `endpoint` (http:// or https://, the certificate checked
/// against `tls`'s CAs and the endpoint's name), one connection per request, with a bearer token
/// when one is given. Every request has a deadline. Not shared between threads.
class JsonHttpClient {
 public:
  /// `tls` is needed for an https:// endpoint only.
  JsonHttpClient(net::HttpEndpoint endpoint, std::string token,
                 std::shared_ptr<boost::asio::ssl::context> tls,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// `method` is "GET", "PUT" or "PATCH"; `body` is sent as JSON when not null. Errors are
  /// connection, TLS and timeout failures, with the cause.
  [[nodiscard]] DetailedResult<JsonResponse> request(std::string_view method,
                                                     const std::string& target,
                                                     const boost::json::value& body = nullptr);
  /// "host:port" as given (for messages), or the URL for https://.
  [[nodiscard]] const std::string& server() const { return server_; }

 private:
  net::HttpEndpoint endpoint_;
  std::string server_;
  std::string token_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ticketd::restride
