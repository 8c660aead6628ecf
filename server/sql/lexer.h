// MySQL-flavoured SQL lexer: turns query text into tokens that point back into the text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ticketd::sql {

enum class TokenKind {
  kWord,              // bare identifier or keyword: SELECT, Tickets64, utf8mb4
  kQuotedIdentifier,  // `a``b`; value is the unquoted name (a`b)
  kString,            // 'x' or "x"; value has escapes and doubled quotes decoded
  kNumber,            // 42, 1.5, 1e3, .5, 0x1F, 0b101 (never signed: '-' is an operator)
  kPlaceholder,       // ?
  kUserVariable,      // @name, @'name', @`name`; value is the lower-cased name
  kSystemVariable,    // @@name, @@session.name; value is the lower-cased name, scope its prefix
  kOperator,          // ( ) , ; . = := <=> <= >= <> != || && << >> -> ->> and single characters
  kEnd,               // end of input
  kError,             // unterminated string, quoted identifier or comment; lexing stops here
};

/// One token. `text` is a view into the lexed query, so a Token must not outlive it.
struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view text;   // exact source text
  std::string value;       // decoded value, see TokenKind; the text itself for the other kinds
  std::string scope;       // kSystemVariable: "session", "global", "local" or "" (lower case)
  std::size_t offset = 0;  // position of `text` in the query

  [[nodiscard]] std::size_t end() const { return offset + text.size(); }
  /// A bare word equal to `keyword`, ignoring ASCII case (`SELECT` matches "select", a quoted
  /// `select` does not).
  [[nodiscard]] bool is_keyword(std::string_view keyword) const;
  [[nodiscard]] bool is_operator(std::string_view op) const {
    return kind == TokenKind::kOperator && text == op;
  }
};

/// Reads tokens one at a time. Skips whitespace and comments: `-- x` (the dashes must be followed
/// by whitespace, as in MySQL), `# x` and `/* x */`. MySQL's executable comments `/*! ... */`,
/// `/*!40101 ... */` and MariaDB's `/*M!100101 ... */` are lexed as SQL, i.e. only the markers are
/// dropped. Optimizer hints `/*+ ... */` are plain comments. Not thread-safe; cheap to create.
class Lexer {
 public:
  explicit Lexer(std::string_view sql) : sql_(sql) {}

  /// The next token; after kEnd or kError it keeps returning that token.
  Token next();

 private:
  // Returns false on an unterminated comment, leaving pos_ at its start.
  bool skip_space_and_comments();
  Token make(TokenKind kind, std::size_t begin, std::size_t end);
  Token lex_quoted(std::size_t begin, char quote, TokenKind kind);
  Token lex_number(std::size_t begin);
  Token lex_word(std::size_t begin);
  Token lex_variable(std::size_t begin);
  Token lex_operator(std::size_t begin);

  std::string_view sql_;
  std::size_t pos_ = 0;
  bool in_executable_comment_ = false;
  bool done_ = false;
  Token last_;
};

/// All tokens of `sql`; the last one is kEnd or kError.
[[nodiscard]] std::vector<Token> tokenize(std::string_view sql);
/// The same, or nullopt once more than `max_tokens` tokens (kEnd not counted) are found: lexing
/// stops there, so the work and memory are bounded by the budget, not by the text's length.
[[nodiscard]] std::optional<std::vector<Token>> tokenize(std::string_view sql,
                                                         std::size_t max_tokens);

/// ASCII case-insensitive comparison, as MySQL does for keywords.
[[nodiscard]] bool iequals(std::string_view a, std::string_view b);
[[nodiscard]] std::string to_lower(std::string_view s);
[[nodiscard]] std::string to_upper(std::string_view s);

}  // namespace ticketd::sql
