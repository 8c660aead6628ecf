#include "server/sql/evaluator.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/sql/lexer.h"
#include "server/sql/token_cursor.h"

namespace ticketd::sql {
namespace {

// A value or SQL NULL.
struct Value {
  bool is_null = false;
  std::string text;
};

class Evaluator {
 public:
  Evaluator(std::string_view expr, const VariableLookup& lookup, const EvalLimits& limits)
      // The expression comes from a statement the recognizer already held to its token budget;
      // the nesting and work bounds below are the evaluator's own.
      : cursor_(expr, std::numeric_limits<std::size_t>::max()), lookup_(lookup), limits_(limits) {}

  std::optional<Value> run() {
    std::optional<Value> v = expression();
    while (v && accept(";")) {
    }
    if (!v || peek().kind != TokenKind::kEnd) return std::nullopt;
    return v;
  }

  [[nodiscard]] EvalFailure failure() const { return failure_; }

 private:
  [[nodiscard]] const Token& peek() const { return cursor_.peek(); }
  const Token& advance() { return cursor_.advance(); }
  bool accept(std::string_view op) { return cursor_.accept_operator(op); }

  // Counts one nesting level for as long as it lives.
  struct Level {
    explicit Level(std::size_t& depth) : depth_(depth) { ++depth_; }
    ~Level() { --depth_; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;
    std::size_t& depth_;
  };

  std::optional<Value> fail(EvalFailure why) {
    if (failure_ == EvalFailure::kNotUnderstood) failure_ = why;
    return std::nullopt;
  }

  // Charges a value about to be kept against the byte bounds; false (and a recorded failure)
  // when it is too large.
  bool charge(std::size_t bytes) {
    work_ += bytes;
    if (bytes > limits_.max_value_bytes ||
        work_ > limits_.max_value_bytes * std::max<std::size_t>(limits_.max_work_factor, 1)) {
      fail(EvalFailure::kTooLarge);
      return false;
    }
    return true;
  }

  std::optional<Value> expression() {
    // Each level costs a few hundred bytes of stack; a 16 MiB query of '(' would otherwise
    // recurse millions of times.
    const Level level(depth_);
    // The outermost expression is level 0; each '(' or function call adds one.
    if (depth_ > limits_.max_depth + 1) return fail(EvalFailure::kTooDeep);
    if (failure_ != EvalFailure::kNotUnderstood) return std::nullopt;
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
        if (!charge(value->size())) return std::nullopt;
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
      std::size_t size = 0;
      for (const Value& a : args) size += a.text.size();
      if (!charge(size)) return std::nullopt;
      Value out;
      out.text.reserve(size);
      for (const Value& a : args) out.text += a.text;
      return out;
    }
    if (t.is_keyword("REPLACE") && args.size() == 3) {
      if (any_null()) return Value{true, ""};
      std::optional<std::string> out =
          replace_all(args[0].text, args[1].text, args[2].text, limits_.max_value_bytes);
      if (!out || !charge(out->size())) return fail(EvalFailure::kTooLarge);
      return Value{false, std::move(*out)};
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
  // nullopt once the result would pass `max_bytes` (REPLACE(@@v, 'a', @@v) squares the size).
  static std::optional<std::string> replace_all(const std::string& s, const std::string& from,
                                                const std::string& to, std::size_t max_bytes) {
    if (from.empty()) return s;
    std::string out;
    std::size_t at = 0;
    for (std::size_t hit = s.find(from); hit != std::string::npos; hit = s.find(from, at)) {
      if (out.size() + (hit - at) + to.size() > max_bytes) return std::nullopt;
      out.append(s, at, hit - at);
      out += to;
      at = hit + from.size();
    }
    if (out.size() + (s.size() - at) > max_bytes) return std::nullopt;
    out.append(s, at);
    return out;
  }

  TokenCursor cursor_;
  const VariableLookup& lookup_;
  const EvalLimits& limits_;
  std::size_t depth_ = 0;
  std::size_t work_ = 0;
  EvalFailure failure_ = EvalFailure::kNotUnderstood;
};

}  // namespace

Evaluation evaluate(std::string_view expr, const VariableLookup& lookup, const EvalLimits& limits) {
  Evaluator evaluator(expr, lookup, limits);
  std::optional<Value> v = evaluator.run();
  if (!v) return Evaluation{std::nullopt, evaluator.failure()};
  if (v->is_null) return Evaluation{};
  return Evaluation{std::move(v->text), EvalFailure::kNotUnderstood};
}

std::optional<std::string> evaluate_simple(std::string_view expr, const VariableLookup& lookup) {
  return evaluate(expr, lookup, EvalLimits{}).value;
}

}  // namespace ticketd::sql
