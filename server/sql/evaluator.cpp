#include "server/sql/evaluator.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/sql/lexer.h"

namespace ticketd::sql {
namespace {

// A value or SQL NULL.
struct Value {
  bool is_null = false;
  std::string text;
};

class Evaluator {
 public:
  Evaluator(std::string_view expr, const VariableLookup& lookup)
      : tokens_(tokenize(expr)), lookup_(lookup) {}

  std::optional<Value> run() {
    std::optional<Value> v = expression();
    while (v && accept(";")) {
    }
    if (!v || peek().kind != TokenKind::kEnd) return std::nullopt;
    return v;
  }

 private:
  [[nodiscard]] const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& advance() {
    const Token& t = peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool accept(std::string_view op) {
    if (!peek().is_operator(op)) return false;
    advance();
    return true;
  }

  std::optional<Value> expression() {
    const Token& t = peek();
    switch (t.kind) {
      case TokenKind::kString:
        advance();
        return Value{false, t.value};
      case TokenKind::kNumber:
        advance();
        return Value{false, std::string(t.text)};
      case TokenKind::kSystemVariable: {
        advance();
        const VariableScope scope = t.scope == "global" ? VariableScope::kGlobal
                                    : t.scope.empty()   ? VariableScope::kDefault
                                                        : VariableScope::kSession;
        std::optional<std::string> value = lookup_ ? lookup_(scope, t.value) : std::nullopt;
        if (!value) return std::nullopt;
        return Value{false, std::move(*value)};
      }
      case TokenKind::kOperator:
        if (accept("-")) {
          if (peek().kind != TokenKind::kNumber) return std::nullopt;
          return Value{false, "-" + std::string(advance().text)};
        }
        if (accept("(")) {
          if (peek().is_keyword("SELECT")) advance();
          std::optional<Value> inner = expression();
          if (!inner || !accept(")")) return std::nullopt;
          return inner;
        }
        return std::nullopt;
      case TokenKind::kWord:
        return word();
      default:
        return std::nullopt;
    }
  }

  std::optional<Value> word() {
    const Token& t = advance();
    if (!peek().is_operator("(")) {
      if (t.is_keyword("NULL")) return Value{true, ""};
      if (t.is_keyword("TRUE")) return Value{false, "1"};
      if (t.is_keyword("FALSE")) return Value{false, "0"};
      if (t.is_keyword("DEFAULT")) return std::nullopt;
      return Value{false, std::string(t.text)};
    }
    advance();
    std::vector<Value> args;
    if (!accept(")")) {
      do {
        std::optional<Value> arg = expression();
        if (!arg) return std::nullopt;
        args.push_back(std::move(*arg));
      } while (accept(","));
      if (!accept(")")) return std::nullopt;
    }
    const auto any_null = [&]() {
      for (const Value& a : args) {
        if (a.is_null) return true;
      }
      return false;
    };
    if (t.is_keyword("CONCAT") && !args.empty()) {
      if (any_null()) return Value{true, ""};
      Value out;
      for (const Value& a : args) out.text += a.text;
      return out;
    }
    if (t.is_keyword("REPLACE") && args.size() == 3) {
      if (any_null()) return Value{true, ""};
      return Value{false, replace_all(args[0].text, args[1].text, args[2].text)};
    }
    if ((t.is_keyword("IFNULL") && args.size() == 2) ||
        (t.is_keyword("COALESCE") && !args.empty())) {
      for (const Value& a : args) {
        if (!a.is_null) return a;
      }
      return Value{true, ""};
    }
    return std::nullopt;
  }

  // MySQL's REPLACE() matches case-sensitively and leaves the string alone for an empty `from`.
  static std::string replace_all(const std::string& s, const std::string& from,
                                 const std::string& to) {
    if (from.empty()) return s;
    std::string out;
    std::size_t at = 0;
    for (std::size_t hit = s.find(from); hit != std::string::npos; hit = s.find(from, at)) {
      out.append(s, at, hit - at);
      out += to;
      at = hit + from.size();
    }
    out.append(s, at);
    return out;
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  const VariableLookup& lookup_;
};

}  // namespace

std::optional<std::string> evaluate_simple(std::string_view expr, const VariableLookup& lookup) {
  std::optional<Value> v = Evaluator(expr, lookup).run();
  if (!v || v->is_null) return std::nullopt;
  return std::move(v->text);
}

}  // namespace ticketd::sql
