// Memory budgets of the MySQL front end: what one connection keeps between commands, and what
// all connections keep together.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

namespace ticketd::mysql {

/// The bytes every connection together may keep (global_connection_memory_limit). Owned by the
/// QueryExecutor, shared by every connection. Thread safety: all members may be called
/// concurrently.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::uint64_t limit = std::numeric_limits<std::uint64_t>::max())
      : limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  /// Reserves `bytes` unless that would pass the limit.
  [[nodiscard]] bool try_reserve(std::uint64_t bytes);
  void release(std::uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }

 private:
  std::atomic<std::uint64_t> used_{0};
  const std::uint64_t limit_;
};

/// The bytes one connection keeps between commands on the client's say-so: COM_STMT_SEND_LONG_DATA
/// parameters, prepared statement texts, session and user variables (connection_memory_limit).
/// Every charge is also reserved in the server-wide MemoryBudget, and given back when released or
/// when the account is destroyed (the connection ends or is reset). Owned by the session state;
/// not thread-safe, like the session.
class ConnectionMemory {
 public:
  enum class Verdict { kOk, kConnectionLimit, kGlobalLimit };

  ConnectionMemory() = default;  // no limit, no global budget (tests)
  ConnectionMemory(std::uint64_t limit, MemoryBudget* global) : limit_(limit), global_(global) {}
  ConnectionMemory(ConnectionMemory&& other) noexcept;
  ConnectionMemory& operator=(ConnectionMemory&& other) noexcept;
  ConnectionMemory(const ConnectionMemory&) = delete;
  ConnectionMemory& operator=(const ConnectionMemory&) = delete;
  ~ConnectionMemory() { release(used_); }

  /// Charges `bytes` if both this connection's and the global budget allow it; else charges
  /// nothing and says which budget refused.
  [[nodiscard]] Verdict try_charge(std::uint64_t bytes);
  void release(std::uint64_t bytes);

  [[nodiscard]] std::uint64_t used() const { return used_; }
  [[nodiscard]] std::uint64_t limit() const { return limit_; }
  [[nodiscard]] const MemoryBudget* global() const { return global_; }

 private:
  std::uint64_t limit_ = std::numeric_limits<std::uint64_t>::max();
  MemoryBudget* global_ = nullptr;
  std::uint64_t used_ = 0;
};

}  // namespace ticketd::mysql
