// How ticketd and its subcommands end: exit statuses, and the errors of the command-line tools.
#pragma once

#include <boost/system/error_code.hpp>
#include <type_traits>

namespace ticketd {

/// The exit status of ticketd and every subcommand (docs/operations.md lists them).
enum class ExitCode : int {
  kOk = 0,
  kFailed = 1,   // the command ran and failed (I/O, a refused start), or verify found a violation
  kRefused = 2,  // bad arguments or config, or what they name does not allow it: nothing done
  kCannotOpen = 3,          // verify: the data directory could not be opened
  kRestartAsFollower = 75,  // a deposed leader: main() re-executes itself as a follower
};

[[nodiscard]] constexpr int exit_status(ExitCode code) { return static_cast<int>(code); }

/// Errors of the command-line tools (backup, restore, restride, import) that no engine enum
/// names; each reads as one exit status (exit_code()).
enum class ToolErrc {
  kRefused = 1,    // the arguments, or what they name, do not allow the command (exit 2)
  kAlreadyExists,  // the output it would create is there already (exit 1)
  kUnreachable,    // a server it must talk to did not answer (exit 1)
};

const boost::system::error_category& tool_category() noexcept;

inline boost::system::error_code make_error_code(ToolErrc e) noexcept {
  return {static_cast<int>(e), tool_category()};
}

/// The exit status a tool ends with when it fails with `code`: kRefused for ToolErrc::kRefused,
/// kFailed for anything else.
[[nodiscard]] ExitCode exit_code(const boost::system::error_code& code);

}  // namespace ticketd

template <>
struct boost::system::is_error_code_enum<ticketd::ToolErrc> : std::true_type {};
