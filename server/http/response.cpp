#include "server/http/response.h"

#include <boost/beast/core/string.hpp>
#include <charconv>
#include <iterator>
#include <utility>

namespace ticketd::http {

namespace {

bool written_by_serialize(std::string_view name) {
  namespace beast = boost::beast;
  return beast::iequals(name, "Server") || beast::iequals(name, "Content-Length") ||
         beast::iequals(name, "Connection");
}

// Where the line of `name` starts in `lines`, and its length with its CRLF; npos when absent.
std::pair<std::size_t, std::size_t> line_of(std::string_view lines, std::string_view name) {
  std::size_t at = 0;
  while (at < lines.size()) {
    const std::size_t end = lines.find("\r\n", at);
    const std::size_t next = end == std::string_view::npos ? lines.size() : end + 2;
    const std::string_view line = lines.substr(at, next - at);
    if (line.size() > name.size() && line[name.size()] == ':' &&
        boost::beast::iequals(line.substr(0, name.size()), name)) {
      return {at, next - at};
    }
    at = next;
  }
  return {std::string_view::npos, 0};
}

}  // namespace

void Response::set(field name, std::string_view value) {
  set(boost::beast::http::to_string(name), value);
}

void Response::set(std::string_view name, std::string_view value) {
  if (written_by_serialize(name)) return;
  if (const auto [at, size] = line_of(fields_, name); at != std::string_view::npos) {
    fields_.erase(at, size);
  }
  fields_.append(name.data(), name.size());
  fields_ += ": ";
  for (const char c : value) fields_ += c == '\r' || c == '\n' || c == '\0' ? ' ' : c;
  fields_ += "\r\n";
}

std::string_view Response::find_in(std::string_view lines, std::string_view name) {
  const auto [at, size] = line_of(lines, name);
  if (at == std::string_view::npos) return {};
  std::string_view value = lines.substr(at + name.size() + 1, size - name.size() - 1);
  if (value.ends_with("\r\n")) value.remove_suffix(2);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return value;
}

std::string_view Response::operator[](field name) const {
  return (*this)[boost::beast::http::to_string(name)];
}

std::string_view Response::operator[](std::string_view name) const {
  const std::string_view in_preset = find_in(preset_, name);
  return in_preset.empty() ? find_in(fields_, name) : in_preset;
}

void Response::serialize(std::string& out) const {
  out.clear();
  out.reserve(96 + preset_.size() + fields_.size() + body_.size());
  out += version_ == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  char number[24];
  const unsigned code = result_int();
  out.append(number, std::to_chars(std::begin(number), std::end(number), code).ptr);
  out += ' ';
  const auto reason = boost::beast::http::obsolete_reason(status_);
  out.append(reason.data(), reason.size());
  out += "\r\nServer: ticketd\r\n";
  out += preset_;
  out += fields_;
  if (code >= 200 && code != 204 && code != 304) {
    out += "Content-Length: ";
    out.append(number, std::to_chars(std::begin(number), std::end(number), body_.size()).ptr);
    out += "\r\n";
  }
  if (version_ == 10 && keep_alive_) out += "Connection: keep-alive\r\n";
  if (version_ != 10 && !keep_alive_) out += "Connection: close\r\n";
  out += "\r\n";
  out += body_;
}

}  // namespace ticketd::http
