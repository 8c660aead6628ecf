#include "server/sql/query_text.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "server/sql/lexer.h"

namespace ticketd::sql {
namespace {

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const std::size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const std::size_t last = s.find_last_not_of(kSpace);
  return s.substr(first, last - first + 1);
}

}  // namespace

std::vector<std::string_view> split_statements(std::string_view sql, std::size_t max_pieces) {
  std::vector<std::string_view> pieces;
  Lexer lexer(sql);
  std::size_t piece_begin = 0;
  bool piece_has_tokens = false;
  for (;;) {
    const Token t = lexer.next();
    if (t.kind == TokenKind::kEnd || t.kind == TokenKind::kError) {
      if (piece_has_tokens || t.kind == TokenKind::kError) {
        pieces.push_back(trim(sql.substr(piece_begin)));
      }
      break;
    }
    if (t.is_operator(";")) {
      if (piece_has_tokens) {
        pieces.push_back(trim(sql.substr(piece_begin, t.offset - piece_begin)));
        if (pieces.size() > max_pieces) break;
      }
      piece_begin = t.end();
      piece_has_tokens = false;
    } else {
      piece_has_tokens = true;
    }
  }
  return pieces;
}

std::size_t count_placeholders(std::string_view sql) {
  std::size_t count = 0;
  Lexer lexer(sql);
  for (Token t = lexer.next(); t.kind != TokenKind::kEnd && t.kind != TokenKind::kError;
       t = lexer.next()) {
    if (t.kind == TokenKind::kPlaceholder) ++count;
  }
  return count;
}

std::string substitute_placeholders(std::string_view sql,
                                    const std::vector<std::string>& literals) {
  std::string out;
  out.reserve(sql.size() + 16 * literals.size());
  std::size_t copied = 0;
  std::size_t index = 0;
  Lexer lexer(sql);
  for (Token t = lexer.next(); t.kind != TokenKind::kEnd && t.kind != TokenKind::kError;
       t = lexer.next()) {
    if (t.kind != TokenKind::kPlaceholder || index >= literals.size()) continue;
    out.append(sql.substr(copied, t.offset - copied));
    out.append(literals[index++]);
    copied = t.end();
  }
  out.append(sql.substr(copied));
  return out;
}

}  // namespace ticketd::sql
