#include "server/restride/restride_plan.h"

#include <algorithm>
#include <limits>

#include "server/base/exit_code.h"
#include "server/core/ticket_errc.h"
#include "server/core/ticket_sequence.h"

namespace ticketd::restride {

Grid grid_of(std::size_t index, std::size_t count) {
  return Grid{static_cast<std::uint64_t>(count), static_cast<std::uint64_t>(index + 1)};
}

std::uint64_t first_above(std::uint64_t floor, Grid grid) {
  const auto v = align_up(static_cast<unsigned __int128>(floor) + 1, grid.increment, grid.offset);
  return v > std::numeric_limits<std::uint64_t>::max() ? std::numeric_limits<std::uint64_t>::max()
                                                       : static_cast<std::uint64_t>(v);
}

DetailedResult<std::uint64_t> floor_above(const std::vector<ServerState>& servers,
                                          std::uint64_t margin) {
  std::uint64_t high = 0;
  std::uint64_t max_value = std::numeric_limits<std::uint64_t>::max();
  bool any = false;
  for (const auto& s : servers) {
    if (!s.exists) continue;
    any = true;
    high = std::max({high, s.durable_ceiling, s.fence});
    max_value = std::min(max_value, s.max_value);
  }
  if (!any) {
    return Error{ToolErrc::kRefused, "no server has the sequence: there is nothing to restride"};
  }
  if (high > max_value || max_value - high < margin) {
    return Error{ToolErrc::kRefused, "the highest durable ceiling " + std::to_string(high) +
                                         " plus the margin " + std::to_string(margin) +
                                         " passes max_value " + std::to_string(max_value)};
  }
  const std::uint64_t floor = high + margin;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    if (first_above(floor, grid_of(i, servers.size())) > max_value) {
      return Error{ToolErrc::kRefused, "no value of the grid of " + servers[i].server + " above " +
                                           std::to_string(floor) + " is within max_value " +
                                           std::to_string(max_value)};
    }
  }
  return floor;
}

bool already_on_grid(const std::vector<ServerState>& servers) {
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto& s = servers[i];
    const auto g = grid_of(i, servers.size());
    if (!s.exists || !s.restrided || s.fence != 0 || s.increment != g.increment ||
        s.offset != g.offset) {
      return false;
    }
  }
  return !servers.empty();
}

std::vector<std::string> check_after(const std::vector<ServerState>& servers, std::uint64_t floor) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto& s = servers[i];
    const auto g = grid_of(i, servers.size());
    if (!s.exists) {
      problems.push_back(s.server + ": the sequence is missing");
      continue;
    }
    if (s.increment != g.increment || s.offset != g.offset) {
      problems.push_back(s.server + ": grid " + std::to_string(s.increment) + "/" +
                         std::to_string(s.offset) + ", expected " + std::to_string(g.increment) +
                         "/" + std::to_string(g.offset));
    }
    if (s.fence != 0) problems.push_back(s.server + ": still fenced at " + std::to_string(s.fence));
    if (!s.restrided) problems.push_back(s.server + ": not marked restrided");
    if (s.next_value != 0 && s.next_value <= floor) {
      problems.push_back(s.server + ": next value " + std::to_string(s.next_value) +
                         " is not above the floor " + std::to_string(floor));
    }
  }
  return problems;
}

}  // namespace ticketd::restride
