#include "server/base/exit_code.h"

#include "server/base/error_category.h"

namespace ticketd {
namespace {

const char* describe_tool(ToolErrc e) noexcept {
  switch (e) {
    case ToolErrc::kRefused:
      return "refused: nothing was done";
    case ToolErrc::kAlreadyExists:
      return "already exists";
    case ToolErrc::kUnreachable:
      return "server unreachable";
  }
  return nullptr;
}

}  // namespace

const boost::system::error_category& tool_category() noexcept {
  static const EnumCategory<ToolErrc> category("ticketd.tool", describe_tool, "unknown tool error");
  return category;
}

ExitCode exit_code(const boost::system::error_code& code) {
  return code == ToolErrc::kRefused ? ExitCode::kRefused : ExitCode::kFailed;
}

}  // namespace ticketd
