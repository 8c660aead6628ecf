#include "server/core/uuidv7_generator.h"

#include <algorithm>
#include <bit>
#include <random>
#include <string_view>

namespace ticketd {
namespace {

constexpr std::uint32_t kCounterMax = 0xFFF;   // 12 bits of rand_a
constexpr std::uint32_t kCounterInit = 0x7FF;  // random start below the rollover guard bit
constexpr std::uint64_t kTimestampMask = (std::uint64_t{1} << 48) - 1;

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

std::array<std::uint64_t, 4> seed_state(std::uint64_t seed) {
  std::array<std::uint64_t, 4> s{};
  for (auto& word : s) word = splitmix64(seed);
  return s;
}

std::uint64_t random_seed() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

}  // namespace

UuidV7Generator::UuidV7Generator(const Clock& clock) : UuidV7Generator(clock, random_seed()) {}

UuidV7Generator::UuidV7Generator(const Clock& clock, std::uint64_t seed)
    : clock_(clock), rng_(seed_state(seed)) {}

std::uint64_t UuidV7Generator::random_locked() {
  // xoshiro256** (Blackman and Vigna): fast, 256 bits of state, not cryptographic.
  const std::uint64_t result = std::rotl(rng_[1] * 5, 7) * 9;
  const std::uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = std::rotl(rng_[3], 45);
  return result;
}

Uuid UuidV7Generator::next() {
  std::int64_t ms = 0;
  std::uint32_t counter = 0;
  std::uint64_t rand_b = 0;
  {
    std::lock_guard lock(mutex_);
    const std::int64_t now = std::max<std::int64_t>(clock_.now_unix_ms(), 0);
    if (now < last_reading_) ++stats_.clock_backward_events;
    last_reading_ = now;
    if (now > last_ms_) {
      last_ms_ = now;
      counter_ = static_cast<std::uint32_t>(random_locked() & kCounterInit);
    } else if (counter_ < kCounterMax) {
      ++counter_;  // same ms, or the clock is behind the newest UUID: count on
    } else {
      ++last_ms_;  // the counter ran out: borrow the next ms
      counter_ = static_cast<std::uint32_t>(random_locked() & kCounterInit);
      ++stats_.counter_overflows;
    }
    ++stats_.issued;
    ms = last_ms_;
    counter = counter_;
    rand_b = random_locked();
  }
  const auto ts = static_cast<std::uint64_t>(ms) & kTimestampMask;
  Uuid u;
  for (int i = 0; i < 6; ++i) u[i] = static_cast<std::uint8_t>(ts >> (40 - 8 * i));
  u[6] = static_cast<std::uint8_t>(0x70 | (counter >> 8));  // version 7
  u[7] = static_cast<std::uint8_t>(counter & 0xFF);
  u[8] = static_cast<std::uint8_t>(0x80 | ((rand_b >> 56) & 0x3F));  // variant 0b10
  for (int i = 9; i < 16; ++i) u[i] = static_cast<std::uint8_t>(rand_b >> (8 * (15 - i)));
  return u;
}

UuidV7Stats UuidV7Generator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string to_string(const Uuid& uuid) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[uuid[i] >> 4]);
    out.push_back(kHex[uuid[i] & 0x0F]);
  }
  return out;
}

std::int64_t uuidv7_unix_ms(const Uuid& uuid) {
  std::uint64_t ms = 0;
  for (int i = 0; i < 6; ++i) ms = ms << 8 | uuid[i];
  return static_cast<std::int64_t>(ms);
}

}  // namespace ticketd
