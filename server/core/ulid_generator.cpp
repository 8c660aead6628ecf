#include "server/core/ulid_generator.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "server/base/hex.h"
#include "server/base/utc_time.h"
#include "server/core/ticket_errc.h"

namespace ticketd {
namespace {

constexpr std::size_t kTimeBytes = 6;
constexpr std::size_t kRandomBytes = 10;
constexpr std::size_t kTextChars = 26;
constexpr std::int64_t kMaxUnixMs = (std::int64_t{1} << 48) - 1;
// How long a caller waits while the kernel's random pool is not initialized (early boot).
constexpr std::int64_t kRandomRetryMs = 10;

constexpr std::string_view kAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr std::uint8_t kNotBase32 = 0xFF;

constexpr std::array<std::uint8_t, 256> make_decode_table() {
  std::array<std::uint8_t, 256> table{};
  table.fill(kNotBase32);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    const auto c = static_cast<unsigned char>(kAlphabet[i]);
    table[c] = static_cast<std::uint8_t>(i);
    if (c >= 'A' && c <= 'Z') table[c - 'A' + 'a'] = static_cast<std::uint8_t>(i);
  }
  // Crockford's decoding aliases: the letters left out of the alphabet because people misread
  // them as digits are read as those digits. U stays invalid.
  table['O'] = table['o'] = 0;
  table['I'] = table['i'] = table['L'] = table['l'] = 1;
  return table;
}

constexpr std::array<std::uint8_t, 256> kDecode = make_decode_table();

// The text is 130 bits, 5 per character: two zero bits, then the ULID's 128, most significant
// first. This is bit `k` of that stream.
bool text_bit(const Ulid& ulid, std::size_t k) {
  if (k < 2) return false;
  const std::size_t bit = k - 2;
  return ((ulid[bit / 8] >> (7 - bit % 8)) & 1) != 0;
}

bool random_part_full(const Ulid& ulid) {
  return std::all_of(ulid.begin() + kTimeBytes, ulid.end(),
                     [](std::uint8_t b) { return b == 0xFF; });
}

// The random part + 1, carrying; the caller has checked that it is not full.
Ulid increment_random(Ulid ulid) {
  for (std::size_t i = ulid.size(); i-- > kTimeBytes;) {
    if (++ulid[i] != 0) break;
  }
  return ulid;
}

UlidNext retry(std::int64_t at_unix_ms, const char* reason) {
  return UlidNext{Ulid{}, Error{TicketErrc::kRetryLater, reason}, at_unix_ms};
}

UlidNext fail(ErrorCode code, std::string message) {
  return UlidNext{Ulid{}, Error{code, std::move(message)}, 0};
}

}  // namespace

ErrorCode getrandom_fill(std::span<std::uint8_t> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::getrandom(out.data() + done, out.size() - done, GRND_NONBLOCK);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrorCode(errno, boost::system::system_category());
    }
    // getrandom never returns 0 for a non-empty request; guard the loop all the same.
    if (n == 0) return make_error_code(boost::system::errc::io_error);
    done += static_cast<std::size_t>(n);
  }
  return {};
}

bool UlidNext::retry_later() const { return error.code == TicketErrc::kRetryLater; }

UlidGenerator::UlidGenerator(const Clock& clock, UlidOptions options)
    : clock_(clock), options_(std::move(options)), ceiling_ms_(options_.ceiling_ms) {
  if (options_.last_issued) {
    last_ = *options_.last_issued;
    last_ms_ = ulid_unix_ms(last_);
    restored_ = options_.restored_reading_ms.has_value();
  }
}

UlidNext UlidGenerator::try_next() {
  std::lock_guard lock(mutex_);
  // Read under the lock, so that readings are ordered as the IDs they produce.
  return next_locked(std::max<std::int64_t>(clock_.now_unix_ms(), 0));
}

UlidNext UlidGenerator::next_locked(std::int64_t now) {
  if (now < last_reading_) ++stats_.clock_backward_events;
  last_reading_ = now;
  if (now > kMaxUnixMs) {
    return fail(TicketErrc::kExhausted,
                who() + "the clock is past the last millisecond a ULID can hold (2^48 - 1)");
  }
  if (last_ms_ < 0 || now > last_ms_) return fresh_locked(now, now);
  const bool full = random_part_full(last_);
  if (now < last_ms_ && options_.policy != ClockPolicy::kLogical) return behind_locked(now, full);
  // The clock reads the last ID's millisecond, or kLogical keeps counting behind it.
  if (!full) return issue_locked(increment_random(last_));
  ++stats_.overflows;
  if (last_ms_ == kMaxUnixMs) {
    return fail(TicketErrc::kExhausted, who() + "the last millisecond a ULID can hold is full");
  }
  if (options_.policy == ClockPolicy::kLogical) return fresh_locked(last_ms_ + 1, now);
  return retry(last_ms_ + 1, "millisecond full");
}

UlidNext UlidGenerator::behind_locked(std::int64_t now, bool full) {
  // The clock reads earlier than the last ID (kFail or kWait). At last_ms_ the next ID is the
  // last + 1, unless the random part is used up: then only the millisecond after it will do.
  const std::int64_t resume_at = full ? last_ms_ + 1 : last_ms_;
  // Behind a restored mark, waiting up to the margin is the normal cost of a restart: only a
  // clock behind the previous run's own last reading is a regression.
  const std::int64_t reference = restored_ ? *options_.restored_reading_ms : last_ms_;
  const std::int64_t behind = (restored_ ? reference : resume_at) - now;
  const bool refused =
      behind > 0 && (options_.policy == ClockPolicy::kFail || behind > options_.max_backward_ms);
  if (!refused) return retry(resume_at, "clock behind");
  std::string message = who() + "the clock (" + format_utc_ms(now) + ") is " +
                        std::to_string(reference - now) + " ms behind " +
                        (restored_ ? "the previous run" : "the last ULID") + "; policy " +
                        std::string(policy_name(options_.policy));
  if (options_.policy == ClockPolicy::kWait) {
    message += " (max_backward_ms " + std::to_string(options_.max_backward_ms) + ")";
  }
  message += " refuses until " + format_utc_ms(resume_at);
  return fail(SnowflakeErrc::kClockMovedBackwards, std::move(message));
}

UlidNext UlidGenerator::fresh_locked(std::int64_t unix_ms, std::int64_t now) {
  if (pool_.size() - pool_next_ < kRandomBytes) {
    const ErrorCode ec = options_.random ? options_.random(pool_) : getrandom_fill(pool_);
    if (ec == boost::system::errc::resource_unavailable_try_again) {
      return retry(now + kRandomRetryMs, "kernel random not ready");
    }
    if (ec) return fail(ec, who() + "no random bytes for a new ULID: " + ec.message());
    pool_next_ = 0;
  }
  Ulid id{};
  const auto ts = static_cast<std::uint64_t>(unix_ms);
  for (std::size_t i = 0; i < kTimeBytes; ++i) {
    id[i] = static_cast<std::uint8_t>(ts >> (8 * (kTimeBytes - 1 - i)));
  }
  const auto random = std::span(pool_).subspan(pool_next_, kRandomBytes);
  std::copy(random.begin(), random.end(), id.begin() + kTimeBytes);
  pool_next_ += kRandomBytes;
  return issue_locked(id);
}

UlidNext UlidGenerator::issue_locked(const Ulid& id) {
  if (ceiling_ms_ && ulid_unix_ms(id) > *ceiling_ms_) {
    // Not handed out: the durable mark does not cover it yet (its random bytes are discarded).
    ++stats_.ceiling_waits;
    UlidNext wait = retry(clock_.now_unix_ms() + 1, "mark pending");
    wait.over_ceiling_ms = ulid_unix_ms(id);
    return wait;
  }
  restored_ = false;
  last_ = id;
  last_ms_ = ulid_unix_ms(id);
  ++stats_.issued;
  return UlidNext{id, Error{}, 0};
}

std::string UlidGenerator::who() const {
  return options_.name.empty() ? std::string("ulid: ") : "ulid '" + options_.name + "': ";
}

void UlidGenerator::raise_floor(const Ulid& floor) {
  std::lock_guard lock(mutex_);
  if (last_ms_ >= 0 && floor <= last_) return;
  last_ = floor;
  last_ms_ = ulid_unix_ms(floor);
}

void UlidGenerator::raise_ceiling(std::int64_t ms) {
  std::lock_guard lock(mutex_);
  if (ceiling_ms_ && *ceiling_ms_ < ms) ceiling_ms_ = ms;
}

Ulid UlidGenerator::last_issued() const {
  std::lock_guard lock(mutex_);
  return last_;
}

UlidStats UlidGenerator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string ulid_to_string(const Ulid& ulid) {
  std::string out(kTextChars, '0');
  for (std::size_t i = 0; i < kTextChars; ++i) {
    unsigned value = 0;
    for (std::size_t j = 0; j < 5; ++j) value = value << 1 | (text_bit(ulid, 5 * i + j) ? 1 : 0);
    out[i] = kAlphabet[value];
  }
  return out;
}

std::optional<Ulid> parse_ulid(std::string_view text) {
  if (text.size() != kTextChars) return std::nullopt;
  Ulid ulid{};
  for (std::size_t i = 0; i < kTextChars; ++i) {
    const std::uint8_t value = kDecode[static_cast<unsigned char>(text[i])];
    if (value == kNotBase32) return std::nullopt;
    if (i == 0 && value > 7) return std::nullopt;  // the two bits above the 128 must be zero
    for (std::size_t j = 0; j < 5; ++j) {
      const std::size_t k = 5 * i + j;
      if (k < 2 || ((value >> (4 - j)) & 1) == 0) continue;
      ulid[(k - 2) / 8] |= static_cast<std::uint8_t>(0x80 >> ((k - 2) % 8));
    }
  }
  return ulid;
}

std::string ulid_to_hex(const Ulid& ulid) { return to_hex(ulid); }

std::optional<Ulid> parse_ulid_hex(std::string_view hex) { return from_hex<16>(hex); }

std::int64_t ulid_unix_ms(const Ulid& ulid) {
  std::uint64_t ms = 0;
  for (std::size_t i = 0; i < kTimeBytes; ++i) ms = ms << 8 | ulid[i];
  return static_cast<std::int64_t>(ms);
}

}  // namespace ticketd
