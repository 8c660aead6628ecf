// JSON shapes of the HTTP API: strict readers for request bodies, writers for responses.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/lease_log.h"
#include "server/core/ticket_sequence.h"
#include "server/core/worker_pool_service.h"

namespace ticketd::http {

/// Largest integer a JSON number carries exactly in every client (2^53 - 1).
inline constexpr std::uint64_t kMaxJsonSafeInteger = (std::uint64_t{1} << 53) - 1;

/// Parses a request body that must be one JSON object. An empty body is an empty object.
/// Not JSON: HttpErrc::kMalformed (400). JSON but not an object: kInvalidField (422).
[[nodiscard]] DetailedResult<boost::json::object> parse_object(std::string_view body);

/// kInvalidField naming the first key of `obj` not in `allowed`. Unknown fields are rejected so
/// a typo ("cont" for "count") never silently falls back to a default.
[[nodiscard]] DetailedResult<void> reject_unknown_fields(
    const boost::json::object& obj, std::initializer_list<std::string_view> allowed);

/// An integer field in [min, max]; fractions, exponents, strings and booleans are rejected.
/// nullopt when the field is absent.
[[nodiscard]] DetailedResult<std::optional<std::uint64_t>> read_integer(
    const boost::json::object& obj, std::string_view field, std::uint64_t min, std::uint64_t max);

/// A 64-bit value field given as a JSON integer or a decimal string ("18446744073709551615"),
/// since clients in JavaScript cannot write numbers above 2^53. nullopt when absent.
[[nodiscard]] DetailedResult<std::optional<std::uint64_t>> read_id(const boost::json::object& obj,
                                                                   std::string_view field);

/// A string field; nullopt when absent.
[[nodiscard]] DetailedResult<std::optional<std::string>> read_string(const boost::json::object& obj,
                                                                     std::string_view field);

/// Unsigned decimal text with no sign, spaces or leading '+'; nullopt on overflow.
[[nodiscard]] std::optional<std::uint64_t> parse_decimal(std::string_view text);

/// {"name":…, "kind":…, "start":"1", "increment":1, "offset":1, "max_value":"…", "cache":1000,
///  "next_value":"…", "durable_ceiling":"…", "issued":"…", "remaining":"…", "exhausted":false}.
/// Values that can pass 2^53 are strings.
[[nodiscard]] boost::json::object sequence_json(const SequenceInfo& info);
/// {"lease_id", "sequence", "first", "last", "step", "count", "holder", "granted_at"}.
[[nodiscard]] boost::json::object lease_json(const Lease& lease);
/// {"lease_id", "pool", "worker_id", "holder", "ttl_s", "granted_at", "expires_at",
///  "expires_at_ms", "not_before_ms", "high_water_ms"}. Times in ms are JSON numbers (< 2^53).
[[nodiscard]] boost::json::object worker_lease_json(const PoolLease& lease);
/// {"pool", "size", "min_ttl_s", "max_ttl_s", "default_ttl_s", "leased", "leases": [...]}.
[[nodiscard]] boost::json::object worker_pool_json(const WorkerPoolStatus& status);
/// {"error":{"code":…, "message":…}}.
[[nodiscard]] std::string error_body(std::string_view code, std::string_view message);

}  // namespace ticketd::http
