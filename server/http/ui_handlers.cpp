#include "server/http/ui_handlers.h"

#include <boost/beast/http/field.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "server/http/http_errc.h"

namespace ticketd::http {
namespace {

using beast::http::field;
using beast::http::status;

struct MediaType {
  std::string_view extension;
  std::string_view type;
};
constexpr MediaType kMediaTypes[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
};

// The page loads its own script and style and talks to this server only; nothing inline,
// nothing from elsewhere, and it cannot be framed.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// A strong validator per file: FNV-1a of its bytes, computed once.
std::string etag_of(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  char text[24];
  std::snprintf(text, sizeof text, "\"%016llx\"", static_cast<unsigned long long>(h));
  return text;
}

const std::vector<std::string>& etags() {
  static const std::vector<std::string> tags = [] {
    std::vector<std::string> out;
    for (const auto& f : ui_files()) out.push_back(etag_of(f.bytes));
    return out;
  }();
  return tags;
}

void serve(const Reply& reply, const RouteRequest& in, std::string_view name) {
  const auto files = ui_files();
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].name != name) continue;
    const auto type = ui_media_type(name);
    if (!type) break;
    const std::string& etag = etags()[i];
    const bool fresh = in.http[field::if_none_match] == etag;
    Response res{fresh ? status::not_modified : status::ok};  // send() sets the version
    res.set(field::content_type, *type);
    res.set(field::etag, etag);
    // Revalidated on every load: a new binary's page is never mixed with an old script.
    res.set(field::cache_control, "no-cache");
    res.set("Content-Security-Policy", kContentSecurityPolicy);
    res.set("X-Content-Type-Options", "nosniff");
    res.set("Referrer-Policy", "no-referrer");
    if (!fresh) res.body().assign(files[i].bytes);
    return reply.send(std::move(res));
  }
  reply.fail(HttpErrc::kNoRoute, "no file '" + std::string(name) + "' in the status page");
}

}  // namespace

std::optional<std::string_view> ui_media_type(std::string_view name) {
  for (const auto& m : kMediaTypes) {
    if (name.size() > m.extension.size() && name.ends_with(m.extension)) return m.type;
  }
  return std::nullopt;
}

void get_ui(const Reply& reply, const RouteRequest& in) { serve(reply, in, "index.html"); }

void get_ui_file(const Reply& reply, const RouteRequest& in) {
  serve(reply, in, in.path.get("file"));
}

}  // namespace ticketd::http
