#include "server/http/handler_support.h"

#include <boost/beast/http/field.hpp>
#include <cctype>

#include "server/core/ticket_errc.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {
namespace {

constexpr std::string_view kJson = "application/json";

// "application/json", in any case, with or without parameters ("; charset=utf-8").
bool is_json_content_type(std::string_view ct) {
  auto media = ct.substr(0, ct.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  if (media.size() != kJson.size()) return false;
  for (std::size_t i = 0; i < media.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(media[i])) != kJson[i]) return false;
  }
  return true;
}

}  // namespace

DetailedResult<boost::json::object> body_object(const Request& req,
                                                std::initializer_list<std::string_view> allowed) {
  using beast::http::field;
  if (!req.body().empty() && !is_json_content_type(req[field::content_type])) {
    return Error{HttpErrc::kUnsupportedMediaType,
                 "request body must be application/json (Content-Type was '" +
                     std::string(req[field::content_type]) + "')"};
  }
  auto obj = parse_object(req.body());
  if (!obj) return obj.error();
  if (auto r = reject_unknown_fields(*obj, allowed); !r) return r.error();
  return obj;
}

DetailedResult<void> check_holder(const std::string& holder) {
  if (holder.size() > kMaxHolderLength) {
    return Error{HttpErrc::kInvalidField,
                 "'holder' must be at most " + std::to_string(kMaxHolderLength) + " bytes"};
  }
  for (unsigned char c : holder) {
    if (c < 0x20 || c == 0x7f) {
      return Error{HttpErrc::kInvalidField, "'holder' must not contain control characters"};
    }
  }
  return {};
}

}  // namespace ticketd::http
