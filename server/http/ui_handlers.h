// GET /ui: the read-only status page. Its files are static and hold no data (the page reads
// the JSON API with the caller's bearer token), so they are served without one.
#pragma once

#include <optional>
#include <string_view>

#include "server/http/route_table.h"
#include "server/http/ui_files.h"

namespace ticketd::http {

/// The page itself (index.html).
void get_ui(const Reply& reply, const RouteRequest& in);
/// One of its files, /ui/{file}; 404 for a name that is not one.
void get_ui_file(const Reply& reply, const RouteRequest& in);

/// The media type a file is served with, from its extension; nullopt for an extension the
/// page does not use (such a file is never served).
[[nodiscard]] std::optional<std::string_view> ui_media_type(std::string_view name);

}  // namespace ticketd::http
