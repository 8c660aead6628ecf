#include "server/sql/lexer.h"

#include <array>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace ticketd::sql {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
char upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
// MySQL identifiers: [0-9a-zA-Z$_] and any byte of a multi-byte UTF-8 character.
bool is_word_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Longest first, so that "<=>" wins over "<=".
constexpr std::array<std::string_view, 12> kMultiCharOperators = {
    "<=>", "->>", ":=", "<=", ">=", "<>", "!=", "||", "&&", "<<", ">>", "->"};

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = upper(c);
  return out;
}

bool Token::is_keyword(std::string_view keyword) const {
  return kind == TokenKind::kWord && iequals(text, keyword);
}

bool Lexer::skip_space_and_comments() {
  while (pos_ < sql_.size()) {
    const std::string_view rest = sql_.substr(pos_);
    if (is_space(rest[0])) {
      ++pos_;
    } else if (in_executable_comment_ && rest.starts_with("*/")) {
      in_executable_comment_ = false;
      pos_ += 2;
    } else if (!in_executable_comment_ && (rest.starts_with("/*!") || rest.starts_with("/*M!"))) {
      // Executable comment: its content is SQL. The version number after '!' is skipped; ticketd
      // always runs the content, as a server newer than any version written there would.
      pos_ += rest[2] == '!' ? 3 : 4;
      while (pos_ < sql_.size() && is_digit(sql_[pos_])) ++pos_;
      in_executable_comment_ = true;
    } else if (rest.starts_with("/*")) {
      const std::size_t close = sql_.find("*/", pos_ + 2);
      if (close == std::string_view::npos) return false;
      pos_ = close + 2;
    } else if (rest[0] == '#' ||
               (rest.starts_with("--") &&
                (rest.size() == 2 || static_cast<unsigned char>(rest[2]) <= ' '))) {
      const std::size_t eol = sql_.find('\n', pos_);
      pos_ = eol == std::string_view::npos ? sql_.size() : eol + 1;
    } else {
      break;
    }
  }
  return true;
}

Token Lexer::make(TokenKind kind, std::size_t begin, std::size_t end) {
  Token t;
  t.kind = kind;
  t.offset = begin;
  t.text = sql_.substr(begin, end - begin);
  t.value = std::string(t.text);
  pos_ = end;
  return t;
}

Token Lexer::next() {
  if (done_) return last_;
  if (!skip_space_and_comments()) {
    done_ = true;
    last_ = make(TokenKind::kError, pos_, sql_.size());
    return last_;
  }
  if (pos_ >= sql_.size()) {
    done_ = true;
    last_ = make(TokenKind::kEnd, sql_.size(), sql_.size());
    return last_;
  }
  const std::size_t begin = pos_;
  const char c = sql_[begin];
  Token t;
  if (c == '\'' || c == '"') {
    t = lex_quoted(begin, c, TokenKind::kString);
  } else if (c == '`') {
    t = lex_quoted(begin, c, TokenKind::kQuotedIdentifier);
  } else if (c == '@') {
    t = lex_variable(begin);
  } else if (c == '?') {
    t = make(TokenKind::kPlaceholder, begin, begin + 1);
  } else if (is_digit(c) || (c == '.' && begin + 1 < sql_.size() && is_digit(sql_[begin + 1]) &&
                             (begin == 0 || !is_word_char(sql_[begin - 1])))) {
    t = lex_number(begin);
  } else if (is_word_char(c)) {
    t = lex_word(begin);
  } else {
    t = lex_operator(begin);
  }
  if (t.kind == TokenKind::kError) {
    done_ = true;
    last_ = t;
  }
  return t;
}

Token Lexer::lex_quoted(std::size_t begin, char quote, TokenKind kind) {
  std::string value;
  std::size_t i = begin + 1;
  // Backslash escapes apply to strings only, never to `identifiers`.
  const bool escapes = kind == TokenKind::kString;
  while (i < sql_.size()) {
    const char c = sql_[i];
    if (escapes && c == '\\' && i + 1 < sql_.size()) {
      const char e = sql_[i + 1];
      switch (e) {
        case '0':
          value += '\0';
          break;
        case 'b':
          value += '\b';
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'Z':
          value += '\x1a';
          break;
        // \% and \_ keep their backslash so that LIKE patterns still see an escaped wildcard.
        case '%':
          value += "\\%";
          break;
        case '_':
          value += "\\_";
          break;
        default:
          value += e;
          break;
      }
      i += 2;
    } else if (c == quote) {
      if (i + 1 < sql_.size() && sql_[i + 1] == quote) {
        value += quote;
        i += 2;
      } else {
        Token t = make(kind, begin, i + 1);
        t.value = std::move(value);
        return t;
      }
    } else {
      value += c;
      ++i;
    }
  }
  return make(TokenKind::kError, begin, sql_.size());
}

Token Lexer::lex_number(std::size_t begin) {
  std::size_t i = begin;
  const auto word_follows = [&](std::size_t at) {
    return at < sql_.size() && is_word_char(sql_[at]);
  };
  if (sql_[i] == '0' && i + 2 < sql_.size() && (sql_[i + 1] == 'x' || sql_[i + 1] == 'X') &&
      is_hex_digit(sql_[i + 2])) {
    i += 2;
    while (i < sql_.size() && is_hex_digit(sql_[i])) ++i;
    return word_follows(i) ? lex_word(begin) : make(TokenKind::kNumber, begin, i);
  }
  if (sql_[i] == '0' && i + 2 < sql_.size() && (sql_[i + 1] == 'b' || sql_[i + 1] == 'B') &&
      (sql_[i + 2] == '0' || sql_[i + 2] == '1')) {
    i += 2;
    while (i < sql_.size() && (sql_[i] == '0' || sql_[i] == '1')) ++i;
    return word_follows(i) ? lex_word(begin) : make(TokenKind::kNumber, begin, i);
  }
  while (i < sql_.size() && is_digit(sql_[i])) ++i;
  bool fraction = false;
  if (i < sql_.size() && sql_[i] == '.') {
    fraction = true;
    ++i;
    while (i < sql_.size() && is_digit(sql_[i])) ++i;
  }
  if (i < sql_.size() && (sql_[i] == 'e' || sql_[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < sql_.size() && (sql_[j] == '+' || sql_[j] == '-')) ++j;
    if (j < sql_.size() && is_digit(sql_[j])) {
      while (j < sql_.size() && is_digit(sql_[j])) ++j;
      i = j;
    }
  }
  // "1abc" and "123_tbl" are identifiers in MySQL.
  if (!fraction && word_follows(i)) return lex_word(begin);
  return make(TokenKind::kNumber, begin, i);
}

Token Lexer::lex_word(std::size_t begin) {
  std::size_t i = begin;
  while (i < sql_.size() && is_word_char(sql_[i])) ++i;
  return make(TokenKind::kWord, begin, i);
}

Token Lexer::lex_variable(std::size_t begin) {
  std::size_t i = begin + 1;
  if (i < sql_.size() && sql_[i] == '@') {
    ++i;
    const auto read_word = [&]() {
      const std::size_t start = i;
      while (i < sql_.size() && is_word_char(sql_[i])) ++i;
      return sql_.substr(start, i - start);
    };
    std::string_view name = read_word();
    std::string scope;
    if (i < sql_.size() && sql_[i] == '.' &&
        (iequals(name, "session") || iequals(name, "global") || iequals(name, "local"))) {
      scope = to_lower(name);
      ++i;
      name = read_word();
    }
    if (name.empty()) return make(TokenKind::kOperator, begin, begin + 2);
    Token t = make(TokenKind::kSystemVariable, begin, i);
    t.value = to_lower(name);
    t.scope = std::move(scope);
    return t;
  }
  if (i < sql_.size() && (sql_[i] == '\'' || sql_[i] == '"' || sql_[i] == '`')) {
    Token quoted = lex_quoted(i, sql_[i], TokenKind::kQuotedIdentifier);
    if (quoted.kind == TokenKind::kError) return make(TokenKind::kError, begin, sql_.size());
    Token t = make(TokenKind::kUserVariable, begin, quoted.end());
    t.value = to_lower(quoted.value);
    return t;
  }
  // Unquoted user variable names may also contain '.' in MySQL.
  while (i < sql_.size() && (is_word_char(sql_[i]) || sql_[i] == '.')) ++i;
  if (i == begin + 1) return make(TokenKind::kOperator, begin, begin + 1);
  Token t = make(TokenKind::kUserVariable, begin, i);
  t.value = to_lower(t.text.substr(1));
  return t;
}

Token Lexer::lex_operator(std::size_t begin) {
  const std::string_view rest = sql_.substr(begin);
  for (std::string_view op : kMultiCharOperators) {
    if (rest.starts_with(op)) return make(TokenKind::kOperator, begin, begin + op.size());
  }
  return make(TokenKind::kOperator, begin, begin + 1);
}

std::vector<Token> tokenize(std::string_view sql) {
  return *tokenize(sql, std::numeric_limits<std::size_t>::max());
}

std::optional<std::vector<Token>> tokenize(std::string_view sql, std::size_t max_tokens) {
  std::vector<Token> tokens;
  Lexer lexer(sql);
  for (;;) {
    tokens.push_back(lexer.next());
    const TokenKind kind = tokens.back().kind;
    if (kind == TokenKind::kEnd || kind == TokenKind::kError) break;
    if (tokens.size() > max_tokens) return std::nullopt;
  }
  return tokens;
}

}  // namespace ticketd::sql
