// An HTTP response as ticketd answers one: a status, a few header fields, a body, written out
// in one buffer.
#pragma once

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace ticketd::http {

/// What a route answers. Smaller than Beast's message: the fields are kept as their wire text
/// ("Name: value\r\n" lines, in the order set), so building the common answers is a few
/// appends, and serialize() copies them out. The fields every answer shares come from a preset
/// (static text, not copied): a JSON answer sets one and allocates nothing for its header.
///
/// serialize() writes what no route sets itself: the status line, `Server: ticketd`,
/// `Content-Length` (from the body; none for 1xx, 204 and 304) and `Connection` when keep-alive
/// differs from the version's default. Those three cannot be set as fields.
/// A value's CR, LF and NUL bytes become spaces: no value can end the header or start another
/// (response splitting), whatever a caller passes.
/// A plain value type: not thread safe, moved from the engine's answer to the session.
class Response {
 public:
  using field = boost::beast::http::field;
  using status = boost::beast::http::status;

  Response() = default;
  explicit Response(status st, unsigned version = 11) : status_(st), version_(version) {}

  [[nodiscard]] status result() const { return status_; }
  void result(status st) { status_ = st; }
  [[nodiscard]] unsigned result_int() const { return static_cast<unsigned>(status_); }
  /// 11 for HTTP/1.1, 10 for HTTP/1.0.
  [[nodiscard]] unsigned version() const { return version_; }
  void version(unsigned v) { version_ = v; }
  [[nodiscard]] bool keep_alive() const { return keep_alive_; }
  void keep_alive(bool on) { keep_alive_ = on; }

  /// Sets a field, replacing one of that name (case-insensitive) set before; the value is
  /// copied. Server, Content-Length and Connection are serialize()'s and are ignored here.
  void set(field name, std::string_view value);
  void set(std::string_view name, std::string_view value);
  /// Fields given as wire text ("Name: value\r\n" lines) in static storage, written before the
  /// ones set(): how the common answers skip formatting. Replaces an earlier preset; a field
  /// set() later with the same name is not looked up in it, so a preset and set() name
  /// different fields.
  void preset(std::string_view lines) { preset_ = lines; }

  /// The field's value, or empty when absent (as Beast's operator[]).
  [[nodiscard]] std::string_view operator[](field name) const;
  [[nodiscard]] std::string_view operator[](std::string_view name) const;

  [[nodiscard]] std::string& body() { return body_; }
  [[nodiscard]] const std::string& body() const { return body_; }

  /// The whole response as it goes on the wire, into `out` (replaced; its capacity is reused).
  void serialize(std::string& out) const;

 private:
  [[nodiscard]] static std::string_view find_in(std::string_view lines, std::string_view name);

  status status_ = status::ok;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  std::string_view preset_;
  std::string fields_;  // "Name: value\r\n" lines set()
  std::string body_;
};

}  // namespace ticketd::http
