#include "server/base/command_line.h"

#include <algorithm>

namespace ticketd {

CommandOption text_option(std::string_view flag, std::string& out) {
  return {flag, true, [&out](const std::string& value) {
            out = value;
            return std::string();
          }};
}

CommandOption switch_option(std::string_view flag, bool& out) {
  return {flag, false, [&out](const std::string&) {
            out = true;
            return std::string();
          }};
}

std::string parse_command_line(std::span<char* const> words, std::span<const CommandOption> options,
                               const UnknownArgument& unknown) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    const auto row = std::find_if(options.begin(), options.end(),
                                  [&](const CommandOption& o) { return o.flag == word; });
    if (row == options.end()) {
      return unknown ? unknown(word) : "unknown argument '" + std::string(word) + "'";
    }
    std::string value;
    if (row->takes_value) {
      if (i + 1 >= words.size()) return std::string(word) + " needs a value";
      value = words[++i];
    }
    if (std::string problem = row->apply(value); !problem.empty()) return problem;
  }
  return {};
}

bool has_word(std::span<char* const> words, std::initializer_list<std::string_view> flags) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) {
    return std::find(flags.begin(), flags.end(), std::string_view(w)) != flags.end();
  });
}

}  // namespace ticketd
