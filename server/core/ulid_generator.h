// ULIDs (github.com/ulid/spec): a 48-bit Unix-millisecond timestamp and 80 random bits,
// monotonic within a millisecond.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/snowflake_generator.h"  // ClockPolicy, SnowflakeErrc

namespace ticketd {

/// The 16-byte binary form: the timestamp big-endian in bytes 0-5, the random part in bytes
/// 6-15, both most significant byte first. `<` on two of them agrees with `<` on their
/// canonical strings, and with their timestamps when those differ.
using Ulid = std::array<std::uint8_t, 16>;

/// Fills every byte of its argument with unpredictable bytes and returns an empty code, or
/// returns why it cannot (a partial fill is never used). A code equal to
/// errc::resource_unavailable_try_again (EAGAIN) means "not yet": try_next() answers
/// kRetryLater; any other code is returned by try_next() as it is.
using UlidRandomSource = std::function<ErrorCode(std::span<std::uint8_t>)>;

/// The default UlidRandomSource: getrandom(2) with GRND_NONBLOCK, repeated on EINTR and short
/// reads. Before the kernel's pool is initialized (early boot) it returns EAGAIN rather than
/// block the caller's thread; ENOSYS (a kernel or seccomp filter without getrandom) and other
/// failures are returned as system_category codes.
[[nodiscard]] ErrorCode getrandom_fill(std::span<std::uint8_t> out);

struct UlidOptions {
  std::string name{};  // the sequence name, for error messages
  ClockPolicy policy = ClockPolicy::kWait;
  std::int64_t max_backward_ms = 5;  // kWait only: the longest wait answered with kRetryLater
  /// The newest ULID issued before (what a backup recorded with last_issued()): the generator
  /// starts as if it had just issued it, so every ID sorts after it whatever the clock reads;
  /// a clock behind it is judged by the policy as any clock behind the last ID.
  std::optional<Ulid> last_issued{};
  /// Set when last_issued is a previous run's durable mark rather than an ID it issued: that
  /// run's last clock reading (the mark's written_at). Being behind the floor is then the
  /// normal wait of a restart; only a clock behind this reading is a regression the policy
  /// judges (as a Snowflake generator resumes above its high-water mark).
  std::optional<std::int64_t> restored_reading_ms{};
  /// The highest millisecond an ID may use until raise_ceiling() moves it (a durable mark that
  /// must cover every ID before it is handed out); none: unbounded.
  std::optional<std::int64_t> ceiling_ms{};
  /// Empty: getrandom_fill. Tests pass a fixed source. Called under the generator's lock for
  /// kRandomPoolBytes at a time.
  UlidRandomSource random{};
};

/// The outcome of one try_next(): an ID, or an Error. With TicketErrc::kRetryLater,
/// `retry_at_unix_ms` (on the generator's clock) is when calling again can succeed: the caller
/// awaits a timer for retry_at_unix_ms - clock.now_unix_ms() and calls again.
struct UlidNext {
  Ulid id{};
  Error error;  // empty code on success
  std::int64_t retry_at_unix_ms = 0;
  /// With kRetryLater because the ID would pass the ceiling: the millisecond it needed.
  std::int64_t over_ceiling_ms = 0;

  [[nodiscard]] bool ok() const { return !error.code; }
  [[nodiscard]] bool retry_later() const;
};

/// Counters since construction, for metrics.
struct UlidStats {
  std::uint64_t issued = 0;
  std::uint64_t overflows = 0;  // calls that found their millisecond's random part used up
  std::uint64_t clock_backward_events = 0;  // readings lower than the previous one
  std::uint64_t ceiling_waits = 0;          // calls told to retry: the ID would pass the ceiling
};

/// Issues ULIDs for one sequence, each sorting after the previous one (as bytes and as text).
///
/// A new millisecond takes 80 bits from the random source; another ID in the same millisecond
/// is the previous one's random part + 1 (the spec's monotonic mode), which also keeps the
/// bits after the first ID of a millisecond guessable: these IDs are identifiers, not secrets.
/// When the random part would overflow, or the clock reads earlier than the last ID, the
/// ClockPolicy decides: kLogical keeps counting (moving to the next millisecond when the
/// random part runs out), so IDs run ahead of the clock until it catches up; kWait answers
/// kRetryLater while the wait is at most max_backward_ms and kClockMovedBackwards beyond;
/// kFail refuses any clock behind the last ID and waits out a full millisecond. try_next()
/// never sleeps.
///
/// The random bytes come from getrandom(2) (the OS CSPRNG), read kRandomPoolBytes at a time
/// into a pool kept under the lock; no seeded PRNG is involved. A failing source makes
/// try_next() return its error; no ID is issued without fresh random bits.
///
/// Restores: UlidOptions::last_issued (or raise_floor()) makes the generator issue only IDs
/// above a ULID recorded by last_issued(), so a restored server never repeats one. Not
/// copyable or movable. Thread safety: all members may be called concurrently.
class UlidGenerator {
 public:
  static constexpr std::size_t kRandomPoolBytes = 4096;

  explicit UlidGenerator(const Clock& clock, UlidOptions options = {});

  /// The next ID, or why not now. Errors: kRetryLater (with retry_at_unix_ms: the clock is
  /// behind the last ID within what kWait tolerates, the millisecond's random part is used up
  /// under kWait or kFail, or the random source said EAGAIN); SnowflakeErrc::
  /// kClockMovedBackwards (kFail: any reading behind the last ID; kWait: a wait beyond
  /// max_backward_ms); kExhausted (past the 48-bit timestamp, in the year 10889); the random
  /// source's own code when it fails.
  [[nodiscard]] UlidNext try_next();

  /// Never issue an ID at or below `floor` from now on (a no-op when the last ID is above it).
  void raise_floor(const Ulid& floor);
  /// Lets IDs use milliseconds up to `ms` (a no-op when the ceiling is higher or unbounded).
  void raise_ceiling(std::int64_t ms);

  /// The newest ID issued, or the floor when that is higher; all zero before either. What a
  /// backup records and a restore passes back as UlidOptions::last_issued.
  [[nodiscard]] Ulid last_issued() const;

  [[nodiscard]] UlidStats stats() const;
  [[nodiscard]] const std::string& name() const { return options_.name; }
  [[nodiscard]] ClockPolicy policy() const { return options_.policy; }

  UlidGenerator(const UlidGenerator&) = delete;
  UlidGenerator& operator=(const UlidGenerator&) = delete;

 private:
  // Members ending in _locked require mutex_.
  [[nodiscard]] UlidNext next_locked(std::int64_t now);
  [[nodiscard]] UlidNext behind_locked(std::int64_t now, bool full);
  [[nodiscard]] UlidNext fresh_locked(std::int64_t unix_ms, std::int64_t now);
  [[nodiscard]] UlidNext issue_locked(const Ulid& id);
  [[nodiscard]] std::string who() const;

  const Clock& clock_;
  const UlidOptions options_;

  mutable std::mutex mutex_;
  Ulid last_{};                     // the newest ID issued, or the floor
  std::int64_t last_ms_ = -1;       // its timestamp; -1: neither yet
  std::int64_t last_reading_ = -1;  // the previous clock reading (regression detection)
  std::optional<std::int64_t> ceiling_ms_;
  bool restored_ = false;  // last_ is a previous run's mark: see UlidOptions::restored_reading_ms
  std::array<std::uint8_t, kRandomPoolBytes> pool_{};
  std::size_t pool_next_ = kRandomPoolBytes;  // first unused byte of pool_
  UlidStats stats_;
};

/// The canonical 26-character text: Crockford base32, uppercase, most significant first.
[[nodiscard]] std::string ulid_to_string(const Ulid& ulid);

/// Reads the canonical text in either case, with Crockford's decoding aliases (I and L read as
/// 1, O as 0). Refused: another length than 26, a character outside the alphabet (U, '-', any
/// non-ASCII byte), and a first character above '7' (more than 128 bits).
[[nodiscard]] std::optional<Ulid> parse_ulid(std::string_view text);

/// The binary form as 32 lowercase hex digits.
[[nodiscard]] std::string ulid_to_hex(const Ulid& ulid);
/// Exactly 32 hex digits (either case) back to the binary form.
[[nodiscard]] std::optional<Ulid> parse_ulid_hex(std::string_view hex);

/// The 48-bit timestamp.
[[nodiscard]] std::int64_t ulid_unix_ms(const Ulid& ulid);

}  // namespace ticketd
