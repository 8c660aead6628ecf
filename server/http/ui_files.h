// The status page's files (server/http/ui/), compiled into the binary: GET /ui needs no
// network fetch and no file on disk.
#pragma once

#include <span>
#include <string_view>

namespace ticketd::http {

struct EmbeddedFile {
  std::string_view name;   // base name, "status.js"
  std::string_view bytes;  // the file as it is in the source tree
};

/// Every file of the page, in a fixed order (generated at build time).
[[nodiscard]] std::span<const EmbeddedFile> ui_files();

}  // namespace ticketd::http
