// A cursor over the tokens of one statement: position, look-ahead and accept helpers, shared by
// the recognizer (recognizer.cpp) and the SET-expression evaluator (evaluator.cpp).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "server/sql/lexer.h"

namespace ticketd::sql {

/// The most tokens one statement may hold. Every statement ticketd serves is linear (or n log n)
/// in its tokens, so this bounds the CPU and memory one statement takes on an I/O thread: about
/// 0.1 s and 25 MiB at the limit (a 131,072-item IN list). 65,535 placeholders, mysqld's limit,
/// still fit in a statement.
inline constexpr std::size_t kMaxStatementTokens = 262144;

/// Owns the tokens of one text and a position in them. The last token is always kEnd or kError
/// (tokenize() guarantees it), and the cursor never moves past it, so peek() is always valid:
/// looking beyond the end keeps answering that last token. A text of more than `max_tokens`
/// tokens is not lexed past the limit: over_budget() says so and the cursor holds one kError
/// token. Cheap to create; not thread-safe.
class TokenCursor {
 public:
  explicit TokenCursor(std::string_view text, std::size_t max_tokens = kMaxStatementTokens) {
    if (auto tokens = tokenize(text, max_tokens)) {
      tokens_ = std::move(*tokens);
    } else {
      over_budget_ = true;
      tokens_.push_back(Token{TokenKind::kError, text.substr(0, 0), "", "", 0});
    }
  }

  /// The text held more than the cursor's token budget.
  [[nodiscard]] bool over_budget() const { return over_budget_; }

  [[nodiscard]] const std::vector<Token>& tokens() const { return tokens_; }
  [[nodiscard]] std::size_t position() const { return pos_; }
  void seek(std::size_t pos) { pos_ = pos < tokens_.size() ? pos : tokens_.size() - 1; }

  [[nodiscard]] const Token& peek(std::size_t ahead = 0) const {
    const std::size_t at = pos_ + ahead;
    return tokens_[at < tokens_.size() ? at : tokens_.size() - 1];
  }
  /// The current token; the cursor moves on unless it is at the last token.
  const Token& advance() {
    const Token& t = peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  [[nodiscard]] bool at_end() const { return peek().kind == TokenKind::kEnd; }

  [[nodiscard]] bool at_keyword(std::string_view keyword, std::size_t ahead = 0) const {
    return peek(ahead).is_keyword(keyword);
  }
  [[nodiscard]] bool at_operator(std::string_view op, std::size_t ahead = 0) const {
    return peek(ahead).is_operator(op);
  }
  bool accept_keyword(std::string_view keyword) {
    if (!at_keyword(keyword)) return false;
    advance();
    return true;
  }
  /// All of `keywords`, in order, or nothing is consumed.
  bool accept_keywords(std::initializer_list<std::string_view> keywords) {
    std::size_t i = 0;
    for (std::string_view k : keywords) {
      if (!at_keyword(k, i++)) return false;
    }
    seek(pos_ + keywords.size());
    return true;
  }
  bool accept_operator(std::string_view op) {
    if (!at_operator(op)) return false;
    advance();
    return true;
  }

 protected:
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  bool over_budget_ = false;
};

}  // namespace ticketd::sql
