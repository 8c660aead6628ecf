#include "server/restride/json_http_client.h"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <utility>

#include "server/base/exit_code.h"
#include "server/core/ticket_errc.h"

namespace ticketd::restride {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

JsonHttpClient::JsonHttpClient(net::HttpEndpoint endpoint, std::string token,
                               std::shared_ptr<asio::ssl::context> tls,
                               std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)),
      token_(std::move(token)),
      tls_(std::move(tls)),
      timeout_(timeout) {
  const bool v6 = endpoint_.host.find(':') != std::string::npos;
  const std::string host_port =
      (v6 ? "[" + endpoint_.host + "]" : endpoint_.host) + ":" + std::to_string(endpoint_.port);
  server_ = endpoint_.tls ? "https://" + host_port : host_port;
}

DetailedResult<JsonResponse> JsonHttpClient::request(std::string_view method,
                                                     const std::string& target,
                                                     const boost::json::value& body) {
  const auto fail = [&](const std::string& what, const beast::error_code& ec,
                        const std::string& detail = {}) {
    return Error{ToolErrc::kUnreachable, server_ + ": " + std::string(method) + " " + target +
                                             ": " + what + ": " + ec.message() +
                                             (detail.empty() ? "" : " (" + detail + ")")};
  };
  asio::io_context ioc;
  net::HttpConnection conn(ioc, tls_.get());
  const auto deadline = net::steady::now() + timeout_;
  std::string detail;
  if (auto ec = conn.connect(endpoint_, deadline, deadline, detail)) {
    return fail(net::is_tls_error(ec) ? "TLS handshake failed" : "cannot connect", ec, detail);
  }
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, endpoint_.tls ? server_.substr(8) : server_);
  req.set(http::field::user_agent, "ticketd-restride");
  req.keep_alive(false);
  if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
  if (!body.is_null()) {
    req.set(http::field::content_type, "application/json");
    req.body() = boost::json::serialize(body);
  }
  req.prepare_payload();
  conn.expires_at(deadline);
  auto ec = conn.run([&](auto handler) {
    conn.visit([&](auto& stream) { http::async_write(stream, req, std::move(handler)); });
  });
  if (ec) return fail("cannot send", ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  ec = conn.run([&](auto handler) {
    conn.visit([&](auto& stream) { http::async_read(stream, buffer, res, std::move(handler)); });
  });
  if (ec) return fail("no answer", ec);
  conn.reset();
  JsonResponse out;
  out.status = res.result_int();
  if (!res.body().empty()) {
    boost::json::error_code jec;
    auto v = boost::json::parse(res.body(), jec);
    if (!jec) out.body = std::move(v);
  }
  return out;
}

}  // namespace ticketd::restride
