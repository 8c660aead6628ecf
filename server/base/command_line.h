// The command lines of ticketd's subcommands: each option a row, one parser for all of them.
#pragma once

#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace ticketd {

/// One option: `--flag VALUE` when `takes_value`, else `--flag` alone. `apply` takes the value
/// (empty for a switch) and returns why it is refused, empty when it is taken.
struct CommandOption {
  std::string_view flag;
  bool takes_value = true;
  std::function<std::string(const std::string& value)> apply;
};

/// `--flag VALUE`, stored in `out` (a later one wins).
[[nodiscard]] CommandOption text_option(std::string_view flag, std::string& out);
/// `--flag` alone, which sets `out`.
[[nodiscard]] CommandOption switch_option(std::string_view flag, bool& out);

/// Why a word no row names is refused; by default "unknown argument '<word>'".
using UnknownArgument = std::function<std::string(std::string_view word)>;

/// Takes `words` (the arguments after the command's name) by the rows, in order. Returns the
/// first problem ("--x needs a value", the unknown-argument text, or a row's own reason), empty
/// when every word was taken. A value is the next word whatever it looks like.
[[nodiscard]] std::string parse_command_line(std::span<char* const> words,
                                             std::span<const CommandOption> options,
                                             const UnknownArgument& unknown = {});

/// Whether one of `words` is one of `flags` (`--help` is looked for before parsing).
[[nodiscard]] bool has_word(std::span<char* const> words,
                            std::initializer_list<std::string_view> flags);

}  // namespace ticketd
