// JSON shapes of the HTTP API: strict readers for request bodies, writers for responses.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/result.h"
#include "server/core/clock.h"
#include "server/core/gapless_sequence.h"
#include "server/core/lease_log.h"
#include "server/core/serving_gate.h"
#include "server/core/snowflake_layout.h"
#include "server/core/ticket_sequence.h"
#include "server/core/ticket_service.h"
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

/// {"name":…, "kind":…, "start":"1", "increment":1, "offset":1, "max_value":"…", "cache":1000,
///  "next_value":"…", "durable_ceiling":"…", "issued":"…", "remaining":"…", "exhausted":false}.
/// Values that can pass 2^53 are strings.
[[nodiscard]] boost::json::object sequence_json(const SequenceInfo& info);
/// {"lease_id", "sequence", "first", "last", "step", "count", "holder", "granted_at"}.
[[nodiscard]] boost::json::object lease_json(const Lease& lease);
/// lease_json(lease) as text, written directly (the answer of every POST …/blocks): the bytes
/// boost::json::serialize gives for it.
[[nodiscard]] std::string lease_text(const Lease& lease);
/// {"lease_id", "pool", "worker_id", "holder", "ttl_s", "granted_at", "expires_at",
///  "expires_at_ms", "not_before_ms", "high_water_ms"}. Times in ms are JSON numbers (< 2^53).
[[nodiscard]] boost::json::object worker_lease_json(const PoolLease& lease);
/// {"pool", "size", "min_ttl_s", "max_ttl_s", "default_ttl_s", "leased", "leases": [...]}.
[[nodiscard]] boost::json::object worker_pool_json(const WorkerPoolStatus& status);
/// {"error":{"code":…, "message":…}}.
[[nodiscard]] std::string error_body(std::string_view code, std::string_view message);
/// {"error":{"code":…, "message":…, "leader":"host:port"|null}}: the answer of an instance
/// that does not serve, naming the leader a client (or proxy) should reconnect to.
[[nodiscard]] std::string not_leader_body(std::string_view code, std::string_view message,
                                          std::string_view leader_http);

/// {"status":…} (GET /healthz, GET /readyz).
[[nodiscard]] boost::json::object status_json(std::string_view status);
/// POST /v1/admin/reload: {"status":"reloaded","applied":[...]}.
[[nodiscard]] boost::json::object reload_json(const std::vector<std::string>& applied);
/// {"role", "serving", "leader", "self", "term", "revision"} (GET /v1/cluster); an address is
/// {"mysql", "http"}, or null when unknown.
[[nodiscard]] boost::json::object cluster_json(const ClusterView& view, bool serving);
/// {"id":"…", "unix_ms", "timestamp", "worker", "sequence"} (GET /v1/snowflake/decode/{id}).
[[nodiscard]] boost::json::object snowflake_parts_json(std::uint64_t id,
                                                       const SnowflakeParts& parts);

/// One sequence of any kind: {"name", "kind"} and the fields its kind's module describes
/// (SequenceDescription::fields; docs/reference/http.md lists them per kind): a ticket
/// sequence as sequence_json(); a gapless one as gapless_sequence_json() plus "start",
/// "increment", "offset", "max_value", "reservation_ttl_ms", "max_reservation_ttl_ms",
/// "strict_wait_ms", "pending". Counts that can pass 2^53 are strings.
[[nodiscard]] boost::json::object sequence_description_json(const SequenceDescription& d);
/// {"sequences": [sequence_description_json…]}.
[[nodiscard]] boost::json::object sequence_list_json(const std::vector<SequenceDescription>& list);
/// A gapless sequence's description: {"name", "kind":"gapless", "order", "next_value",
/// "committed_through"} (null until the first commit).
[[nodiscard]] boost::json::object gapless_sequence_json(std::string_view name,
                                                        const GaplessAudit& audit,
                                                        std::uint64_t next_value);
/// {"sequence", "ids": ["…", …]}: the values of `block` as decimal strings, written as text
/// directly (the answer of every `next`, so no DOM): the bytes boost::json::serialize gives
/// for the same object.
[[nodiscard]] std::string block_ids_text(std::string_view sequence, const Block& block);
/// The same text, appended to `out` (a buffer the session reuses).
void append_block_ids(std::string& out, std::string_view sequence, const Block& block);
/// Appends `text` as a JSON string, quotes and escapes as boost::json::serialize writes them.
void append_json_string(std::string& out, std::string_view text);
/// {"sequence", "ids": ["…", …]}: IDs already in their text form (UUIDs).
[[nodiscard]] boost::json::object text_ids_json(std::string_view sequence,
                                                const std::vector<std::string>& ids);
/// {"sequence", "leases": [lease_json…]} (GET /v1/sequences/{name}/blocks).
[[nodiscard]] boost::json::object lease_list_json(std::string_view sequence,
                                                  const std::vector<Lease>& leases);

/// {"sequence", "reservation_id", "id", "holder", "expires_at"}: a new gapless reservation.
[[nodiscard]] boost::json::object reservation_json(std::string_view sequence,
                                                   const Reservation& reservation);
/// What a commit or void settled: {"sequence", "reservation_id", "id", "status"} with status
/// "committed", or "void" plus "reason". `number` is the reservation ID's number part.
[[nodiscard]] boost::json::object reservation_outcome_json(
    std::string_view sequence, std::string_view reservation_id, std::string_view number,
    const std::optional<std::string>& void_reason);
/// GET /v1/sequences/{name}/audit: {"sequence", "kind", "order", "committed_through", "high",
/// "committed", "pending", "released", "voids", "holes", "waiting", "commits", "releases",
/// "expiries", "queue_timeouts"}; numbers are decimal strings, absent ones null.
[[nodiscard]] boost::json::object gapless_audit_json(std::string_view sequence,
                                                     const GaplessAudit& audit);

}  // namespace ticketd::http
