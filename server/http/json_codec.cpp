#include "server/http/json_codec.h"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>

#include "server/http/http_errc.h"

namespace ticketd::http {
namespace json = boost::json;

namespace {

Error invalid(std::string message) { return Error{HttpErrc::kInvalidField, std::move(message)}; }

std::string quoted(std::string_view field) { return "'" + std::string(field) + "'"; }

}  // namespace

DetailedResult<json::object> parse_object(std::string_view body) {
  if (body.empty()) return json::object{};
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 8;  // request bodies are flat; deep nesting is only an attack
  json::value v = json::parse(body, ec, {}, opts);
  if (ec) return Error{HttpErrc::kMalformed, "request body is not valid JSON: " + ec.message()};
  if (!v.is_object()) return invalid("request body must be a JSON object");
  return std::move(v.as_object());
}

DetailedResult<void> reject_unknown_fields(const json::object& obj,
                                           std::initializer_list<std::string_view> allowed) {
  for (const auto& kv : obj) {
    bool known = false;
    for (auto a : allowed) known = known || kv.key() == a;
    if (!known) return invalid("unknown field " + quoted(kv.key()));
  }
  return {};
}

DetailedResult<std::optional<std::uint64_t>> read_integer(const json::object& obj,
                                                          std::string_view field, std::uint64_t min,
                                                          std::uint64_t max) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return std::optional<std::uint64_t>{};
  const std::string range =
      " must be an integer in " + std::to_string(min) + ".." + std::to_string(max);
  std::uint64_t n = 0;
  if (v->is_uint64()) {
    n = v->get_uint64();
  } else if (v->is_int64()) {
    if (v->get_int64() < 0) return invalid(quoted(field) + range);
    n = static_cast<std::uint64_t>(v->get_int64());
  } else {
    // Doubles (1.5, 1e3, or integers too large for 64 bits), strings, booleans, null.
    return invalid(quoted(field) + range);
  }
  if (n < min || n > max) return invalid(quoted(field) + range);
  return std::optional<std::uint64_t>{n};
}

DetailedResult<std::optional<std::uint64_t>> read_id(const json::object& obj,
                                                     std::string_view field) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return std::optional<std::uint64_t>{};
  const std::string what =
      quoted(field) + " must be an unsigned 64-bit integer (a JSON integer or a decimal string)";
  if (v->is_uint64()) return std::optional<std::uint64_t>{v->get_uint64()};
  if (v->is_int64()) {
    if (v->get_int64() < 0) return invalid(what);
    return std::optional<std::uint64_t>{static_cast<std::uint64_t>(v->get_int64())};
  }
  if (v->is_string()) {
    auto n = parse_decimal(v->get_string());
    if (!n) return invalid(what);
    return std::optional<std::uint64_t>{*n};
  }
  return invalid(what);
}

DetailedResult<std::optional<std::string>> read_string(const json::object& obj,
                                                       std::string_view field) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return std::optional<std::string>{};
  if (!v->is_string()) return invalid(quoted(field) + " must be a string");
  return std::optional<std::string>{std::string(v->get_string())};
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

json::object sequence_json(const SequenceInfo& info) {
  const auto& spec = info.spec;
  return json::object{
      {"name", spec.name},
      {"kind", kind_name(spec.kind)},
      {"start", std::to_string(spec.start)},
      {"increment", spec.increment},
      {"offset", spec.offset},
      {"max_value", std::to_string(spec.max_value)},
      {"cache", spec.cache},
      {"next_value", std::to_string(info.next_value)},
      {"durable_ceiling", std::to_string(info.durable_ceiling)},
      {"issued", std::to_string(info.issued)},
      {"remaining", std::to_string(info.remaining)},
      {"exhausted", info.exhausted},
  };
}

json::object lease_json(const Lease& lease) {
  return json::object{
      {"lease_id", lease.lease_id},
      {"sequence", lease.sequence},
      {"first", std::to_string(lease.block.first)},
      {"last", std::to_string(lease.block.last())},
      {"step", lease.block.step},
      {"count", lease.block.count},
      {"holder", lease.holder},
      {"granted_at", format_utc_ms(lease.granted_at_ms)},
  };
}

json::object worker_lease_json(const PoolLease& lease) {
  return json::object{
      {"lease_id", lease.lease_id},
      {"pool", lease.pool},
      {"worker_id", lease.worker_id},
      {"holder", lease.holder},
      {"ttl_s", lease.ttl_ms / 1000},
      {"granted_at", format_utc_ms(lease.granted_at_ms)},
      {"expires_at", format_utc_ms(lease.expires_at_ms)},
      {"expires_at_ms", lease.expires_at_ms},
      {"not_before_ms", lease.not_before_ms},
      {"high_water_ms", lease.high_water_ms},
  };
}

json::object worker_pool_json(const WorkerPoolStatus& status) {
  json::array leases;
  for (const auto& l : status.live) leases.push_back(worker_lease_json(l));
  return json::object{
      {"pool", status.spec.name},
      {"size", status.spec.size},
      {"min_ttl_s", status.spec.min_ttl_ms / 1000},
      {"max_ttl_s", status.spec.max_ttl_ms / 1000},
      {"default_ttl_s", status.spec.default_ttl_ms / 1000},
      {"leased", status.live.size()},
      {"leases", std::move(leases)},
  };
}

std::string error_body(std::string_view code, std::string_view message) {
  return json::serialize(
      json::object{{"error", json::object{{"code", code}, {"message", message}}}});
}

}  // namespace ticketd::http
