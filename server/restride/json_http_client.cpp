#include "server/restride/json_http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <utility>

#include "server/core/ticket_errc.h"

namespace ticketd::restride {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

JsonHttpClient::JsonHttpClient(std::string server, std::string token,
                               std::chrono::milliseconds timeout)
    : server_(std::move(server)), token_(std::move(token)), timeout_(timeout) {
  // "[::1]:8080" or "host:8080": the port follows the last ':'.
  const auto colon = server_.rfind(':');
  host_ = colon == std::string::npos ? server_ : server_.substr(0, colon);
  port_ = colon == std::string::npos ? "80" : server_.substr(colon + 1);
  if (host_.size() >= 2 && host_.front() == '[' && host_.back() == ']') {
    host_ = host_.substr(1, host_.size() - 2);
  }
}

DetailedResult<JsonResponse> JsonHttpClient::request(std::string_view method,
                                                     const std::string& target,
                                                     const boost::json::value& body) {
  const auto fail = [&](const std::string& what, const beast::error_code& ec) {
    return Error{TicketErrc::kShuttingDown, server_ + ": " + std::string(method) + " " + target +
                                                ": " + what + ": " + ec.message()};
  };
  asio::io_context ioc;
  asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  const auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) return fail("cannot resolve", ec);
  beast::tcp_stream stream(ioc);
  stream.expires_after(timeout_);
  stream.connect(endpoints, ec);
  if (ec) return fail("cannot connect", ec);
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, server_);
  req.set(http::field::user_agent, "ticketd-restride");
  if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
  if (!body.is_null()) {
    req.set(http::field::content_type, "application/json");
    req.body() = boost::json::serialize(body);
  }
  req.prepare_payload();
  stream.expires_after(timeout_);
  http::write(stream, req, ec);
  if (ec) return fail("cannot send", ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res, ec);
  if (ec) return fail("no answer", ec);
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
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
