// The arithmetic of growing servers that share a value space onto a wider grid (pure).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/base/result.h"

namespace ticketd::restride {

/// One server's view of the sequence, as GET /v1/sequences/{name} shows it.
struct ServerState {
  std::string server;   // host:port, for messages
  bool exists = false;  // false: a new server that does not have the sequence yet
  std::uint64_t increment = 0;
  std::uint64_t offset = 0;
  std::uint64_t durable_ceiling = 0;
  std::uint64_t fence = 0;  // 0: none
  std::uint64_t max_value = 0;
  std::uint64_t cache = 0;
  std::uint64_t next_value = 0;
  bool restrided = false;
};

/// The grid of the server at `index` (0-based) of `count`: increment count, offset index + 1.
struct Grid {
  std::uint64_t increment = 1;
  std::uint64_t offset = 1;
};
[[nodiscard]] Grid grid_of(std::size_t index, std::size_t count);

/// The floor F every server is fenced at and restrided above: `margin` above the highest
/// durable ceiling (or fence) any server reports, so that the values they issue while the fences
/// are being set stay below it. kInvalidArgument when F or the first value above it would pass
/// the smallest max_value, or when a server's grid is already wider than `count`.
[[nodiscard]] DetailedResult<std::uint64_t> floor_above(const std::vector<ServerState>& servers,
                                                        std::uint64_t margin);

/// The first value of `grid` above `floor`.
[[nodiscard]] std::uint64_t first_above(std::uint64_t floor, Grid grid);

/// True when every server already has the sequence on its grid of `servers.size()`, with no
/// fence and marked restrided: a second run has nothing to do.
[[nodiscard]] bool already_on_grid(const std::vector<ServerState>& servers);

/// What is wrong after the restrides: each server must be on its grid, unfenced, restrided,
/// with its next value above `floor`. Empty when all is well.
[[nodiscard]] std::vector<std::string> check_after(const std::vector<ServerState>& servers,
                                                   std::uint64_t floor);

}  // namespace ticketd::restride
