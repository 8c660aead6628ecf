#include "server/http/routes.h"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "server/core/ticket_errc.h"
#include "server/core/worker_errc.h"
#include "server/http/auth.h"
#include "server/http/error_mapping.h"
#include "server/http/http_errc.h"
#include "server/http/json_codec.h"

namespace ticketd::http {
namespace {

namespace json = boost::json;
using beast::http::field;
using beast::http::status;
using beast::http::verb;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kFrontend = "http";
constexpr std::string_view kJson = "application/json";

enum class Route {
  kHealthz,
  kReadyz,
  kMetrics,
  kSequences,
  kSequence,
  kNext,
  kBlocks,
  kSnowflakeDecode,
  kReservations,       // POST /v1/sequences/{name}/reservations
  kReservation,        // DELETE …/reservations/{rid}
  kReservationCommit,  // POST …/reservations/{rid}/commit
  kReservationVoid,    // POST …/reservations/{rid}/void
  kAudit,              // GET /v1/sequences/{name}/audit
  kWorkerPool,         // GET /v1/workers/{pool}
  kWorkerLeases,       // POST /v1/workers/{pool}/leases
  kWorkerLease,        // DELETE /v1/workers/{pool}/leases/{id}
  kWorkerKeepalive,    // POST /v1/workers/{pool}/leases/{id}/keepalive
  kCluster,
  kUnmatched,
};

// Route names are the `route` label of ticketd_request_duration_seconds.
std::string_view route_label(Route r, verb method) {
  switch (r) {
    case Route::kHealthz:
      return "healthz";
    case Route::kReadyz:
      return "readyz";
    case Route::kMetrics:
      return "metrics";
    case Route::kSequences:
      return "sequences_list";
    case Route::kSequence:
      switch (method) {
        case verb::get:
          return "sequence_get";
        case verb::put:
          return "sequence_put";
        case verb::patch:
          return "sequence_patch";
        case verb::delete_:
          return "sequence_delete";
        default:
          return "sequence";
      }
    case Route::kNext:
      return "next";
    case Route::kBlocks:
      return method == verb::post ? "blocks_lease" : "blocks_list";
    case Route::kSnowflakeDecode:
      return "snowflake_decode";
    case Route::kReservations:
      return "reservation_create";
    case Route::kReservation:
      return "reservation_release";
    case Route::kReservationCommit:
      return "reservation_commit";
    case Route::kReservationVoid:
      return "reservation_void";
    case Route::kAudit:
      return "audit";
    case Route::kWorkerPool:
      return "worker_pool_get";
    case Route::kWorkerLeases:
      return "worker_lease_acquire";
    case Route::kWorkerLease:
      return "worker_lease_release";
    case Route::kWorkerKeepalive:
      return "worker_lease_keepalive";
    case Route::kCluster:
      return "cluster";
    case Route::kUnmatched:
      return "unmatched";
  }
  return "unmatched";
}

std::string_view allowed_methods(Route r) {
  switch (r) {
    case Route::kHealthz:
    case Route::kReadyz:
    case Route::kMetrics:
    case Route::kSequences:
    case Route::kSnowflakeDecode:
    case Route::kAudit:
    case Route::kWorkerPool:
    case Route::kCluster:
      return "GET";
    case Route::kWorkerLeases:
    case Route::kWorkerKeepalive:
      return "POST";
    case Route::kWorkerLease:
      return "DELETE";
    case Route::kSequence:
      return "GET, PUT, PATCH, DELETE";
    case Route::kNext:
    case Route::kReservations:
    case Route::kReservationCommit:
    case Route::kReservationVoid:
      return "POST";
    case Route::kReservation:
      return "DELETE";
    case Route::kBlocks:
      return "GET, POST";
    case Route::kUnmatched:
      return "";
  }
  return "";
}

bool method_allowed(Route r, verb m) {
  switch (r) {
    case Route::kHealthz:
    case Route::kReadyz:
    case Route::kMetrics:
    case Route::kSequences:
    case Route::kSnowflakeDecode:
    case Route::kAudit:
    case Route::kWorkerPool:
    case Route::kCluster:
      return m == verb::get;
    case Route::kWorkerLeases:
    case Route::kWorkerKeepalive:
      return m == verb::post;
    case Route::kWorkerLease:
      return m == verb::delete_;
    case Route::kSequence:
      return m == verb::get || m == verb::put || m == verb::patch || m == verb::delete_;
    case Route::kNext:
    case Route::kReservations:
    case Route::kReservationCommit:
    case Route::kReservationVoid:
      return m == verb::post;
    case Route::kReservation:
      return m == verb::delete_;
    case Route::kBlocks:
      return m == verb::get || m == verb::post;
    case Route::kUnmatched:
      return false;
  }
  return false;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding of one path segment or query component; nullopt on a bad escape.
std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hex_digit(s[i + 1]);
      const int lo = hex_digit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct Target {
  Route route = Route::kUnmatched;
  std::string name;      // the decoded {name} (or {pool}) segment
  std::string sub;       // the decoded {rid} segment of reservation routes
  std::string lease_id;  // the decoded {id} segment of worker lease routes
  std::map<std::string, std::string, std::less<>> query;
};

// "{pool}", "{pool}/leases", "{pool}/leases/{id}" or "{pool}/leases/{id}/keepalive" (the part
// after "/v1/workers/"); anything else leaves the route unmatched.
DetailedResult<void> parse_worker_path(std::string_view rest, Target& t) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (parts.back().empty()) return {};
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (parts.size() > 4 || (parts.size() >= 2 && parts[1] != "leases") ||
      (parts.size() == 4 && parts[3] != "keepalive")) {
    return {};
  }
  auto pool = percent_decode(parts[0], false);
  auto id = parts.size() >= 3 ? percent_decode(parts[2], false) : std::optional<std::string>("");
  if (!pool || !id) return Error{HttpErrc::kMalformed, "bad percent-encoding in the path"};
  t.name = std::move(*pool);
  t.lease_id = std::move(*id);
  constexpr Route kByLength[] = {Route::kWorkerPool, Route::kWorkerLeases, Route::kWorkerLease,
                                 Route::kWorkerKeepalive};
  t.route = kByLength[parts.size() - 1];
  return {};
}

DetailedResult<Target> parse_target(std::string_view target) {
  Target t;
  std::string_view path = target;
  std::string_view query;
  if (auto q = target.find('?'); q != std::string_view::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  while (!query.empty()) {
    auto amp = query.find('&');
    auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty()) continue;
    auto eq = part.find('=');
    auto key = percent_decode(part.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? "" : part.substr(eq + 1), true);
    if (!key || !value) return Error{HttpErrc::kMalformed, "bad percent-encoding in the query"};
    t.query[*key] = *value;
  }
  if (path == "/healthz") {
    t.route = Route::kHealthz;
  } else if (path == "/readyz") {
    t.route = Route::kReadyz;
  } else if (path == "/metrics") {
    t.route = Route::kMetrics;
  } else if (path == "/v1/cluster") {
    t.route = Route::kCluster;
  } else if (path == "/v1/sequences") {
    t.route = Route::kSequences;
  } else if (constexpr std::string_view kDecode = "/v1/snowflake/decode/";
             path.starts_with(kDecode) && path.size() > kDecode.size()) {
    t.route = Route::kSnowflakeDecode;
    t.name = std::string(path.substr(kDecode.size()));
  } else if (constexpr std::string_view kWorkers = "/v1/workers/"; path.starts_with(kWorkers)) {
    if (auto r = parse_worker_path(path.substr(kWorkers.size()), t); !r) return r.error();
  } else if (constexpr std::string_view kPrefix = "/v1/sequences/"; path.starts_with(kPrefix)) {
    auto rest = path.substr(kPrefix.size());
    auto slash = rest.find('/');
    auto segment = rest.substr(0, slash);
    auto tail = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    if (segment.empty()) return t;
    if (tail.empty()) {
      t.route = Route::kSequence;
    } else if (tail == "/next") {
      t.route = Route::kNext;
    } else if (tail == "/blocks") {
      t.route = Route::kBlocks;
    } else if (tail == "/audit") {
      t.route = Route::kAudit;
    } else if (tail == "/reservations") {
      t.route = Route::kReservations;
    } else if (constexpr std::string_view kRes = "/reservations/"; tail.starts_with(kRes)) {
      auto r = tail.substr(kRes.size());
      auto s2 = r.find('/');
      auto rid = r.substr(0, s2);
      auto action = s2 == std::string_view::npos ? std::string_view{} : r.substr(s2);
      if (rid.empty()) return t;
      if (action.empty()) {
        t.route = Route::kReservation;
      } else if (action == "/commit") {
        t.route = Route::kReservationCommit;
      } else if (action == "/void") {
        t.route = Route::kReservationVoid;
      } else {
        return t;
      }
      auto decoded = percent_decode(rid, false);
      if (!decoded)
        return Error{HttpErrc::kMalformed, "bad percent-encoding in the reservation id"};
      t.sub = std::move(*decoded);
    } else {
      return t;
    }
    auto name = percent_decode(segment, false);
    if (!name) return Error{HttpErrc::kMalformed, "bad percent-encoding in the sequence name"};
    t.name = std::move(*name);
  }
  return t;
}

// Builds responses for one request and reports them to the metrics. Copyable, so it can ride
// in the engine's std::function callbacks; `done` is shared because it must run once.
class Reply {
 public:
  Reply(const HttpDeps& deps, const Request& req, std::function<void(Response)> done)
      : deps_(&deps),
        version_(req.version()),
        keep_alive_(req.keep_alive()),
        start_(Clock::now()),
        done_(std::make_shared<std::function<void(Response)>>(std::move(done))) {}

  void set_route(std::string_view route) { route_ = route; }
  [[nodiscard]] const HttpDeps& deps() const { return *deps_; }

  void send(Response res) const {
    res.version(version_);
    res.keep_alive(keep_alive_);
    res.set(field::server, "ticketd");
    if (!res.has_content_length() && res.result() != status::no_content) res.prepare_payload();
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    deps_->metrics.request_latency(kFrontend, route_, seconds);
    (*done_)(std::move(res));
  }

  void json(status st, const json::value& body) const {
    Response res{st, version_};
    res.set(field::content_type, kJson);
    res.set(field::cache_control, "no-store");
    res.body() = json::serialize(body);
    res.prepare_payload();
    send(std::move(res));
  }

  void no_content() const {
    Response res{status::no_content, version_};
    res.set(field::cache_control, "no-store");
    send(std::move(res));
  }

  void fail(const Error& e, std::string_view allow = {}) const {
    const auto m = map_error(e.code);
    deps_->metrics.error(kFrontend, m.code);
    Response res{m.status, version_};
    res.set(field::content_type, kJson);
    res.set(field::cache_control, "no-store");
    if (!allow.empty()) res.set(field::allow, allow);
    if (m.status == status::unauthorized)
      res.set(field::www_authenticate, "Bearer realm=\"ticketd\"");
    if (e.code == TicketErrc::kRetryLater || e.code == WorkerErrc::kPoolFull) {
      res.set(field::retry_after, "1");
    }
    // The message is what the engine wrote; 500s carry it too, since ticketd's messages never
    // hold secrets and an operator needs them.
    res.body() = error_body(m.code, e.message.empty() ? e.code.message() : e.message);
    if (e.code == TicketErrc::kNotLeader && deps_->gate != nullptr) {
      // Clients (and proxies) reconnect to the leader named here.
      const auto leader = deps_->gate->view().leader.http;
      res.body() = json::serialize(json::object{
          {"error",
           json::object{{"code", m.code},
                        {"message", e.message},
                        {"leader", leader.empty() ? json::value() : json::value(leader)}}}});
    }
    res.prepare_payload();
    send(std::move(res));
  }

  void fail(ErrorCode code, std::string message) const { fail(Error{code, std::move(message)}); }

 private:
  const HttpDeps* deps_;
  unsigned version_;
  bool keep_alive_;
  Clock::time_point start_;
  std::string_view route_ = "unmatched";
  std::shared_ptr<std::function<void(Response)>> done_;
};

bool is_json_content_type(std::string_view ct) {
  auto semi = ct.find(';');
  auto media = ct.substr(0, semi);
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  if (media.size() != kJson.size()) return false;
  for (std::size_t i = 0; i < media.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(media[i])) != kJson[i]) return false;
  }
  return true;
}

// Parses a JSON body, with the media type checked first (415 before 400/422).
DetailedResult<json::object> body_object(const Request& req,
                                         std::initializer_list<std::string_view> allowed) {
  if (!req.body().empty() && !is_json_content_type(req[field::content_type])) {
    return Error{HttpErrc::kUnsupportedMediaType,
                 "request body must be application/json (Content-Type was '" +
                     std::string(req[field::content_type]) + "')"};
  }
  auto obj = parse_object(req.body());
  if (!obj) return obj.error();
  if (auto r = reject_unknown_fields(*obj, allowed); !r) return r.error();
  return obj;
}

DetailedResult<void> reject_unknown_query(const Target& t,
                                          std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, _] : t.query) {
    bool known = false;
    for (auto a : allowed) known = known || k == a;
    if (!known) return Error{HttpErrc::kInvalidField, "unknown query parameter '" + k + "'"};
  }
  return {};
}

Error unknown_sequence(std::string_view name) {
  return Error{TicketErrc::kUnknownSequence, "sequence '" + std::string(name) + "' does not exist"};
}

// GET /v1/snowflake/decode/{id}: the parts of an ID under the configured layout.
void get_snowflake_decode(const Reply& reply, const std::string& text) {
  const auto generators = reply.deps().tickets.snowflakes();
  if (generators.empty()) {
    return reply.fail(HttpErrc::kNoRoute, "no Snowflake sequence is configured");
  }
  std::uint64_t id = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    return reply.fail(HttpErrc::kInvalidField, "'" + text + "' is not a decimal 64-bit ID");
  }
  const auto& layout = generators.front()->layout();
  auto parts = layout.decode(id);
  if (!parts) return reply.fail(HttpErrc::kInvalidField, "'" + text + "' has the sign bit set");
  reply.json(status::ok, json::object{{"id", std::to_string(id)},
                                      {"unix_ms", parts->unix_ms},
                                      {"timestamp", format_utc_ms(parts->unix_ms)},
                                      {"worker", parts->worker},
                                      {"sequence", parts->sequence}});
}

void get_sequences(const Reply& reply) {
  json::array list;
  for (const auto& info : reply.deps().tickets.list()) list.push_back(sequence_json(info));
  reply.json(status::ok, json::object{{"sequences", std::move(list)}});
}

void get_sequence(const Reply& reply, const std::string& name) {
  auto seq = reply.deps().tickets.find(name);
  if (!seq) {
    if (auto g = reply.deps().tickets.find_gapless(name)) {
      const auto a = g->audit(0);
      return reply.json(
          status::ok,
          json::object{{"name", name},
                       {"kind", "gapless"},
                       {"order", order_name(a.order)},
                       {"next_value", std::to_string(g->next_value())},
                       {"committed_through", a.committed_through
                                                 ? json::value(std::to_string(*a.committed_through))
                                                 : json::value(nullptr)}});
    }
    return reply.fail(unknown_sequence(name));
  }
  reply.json(status::ok, sequence_json(seq->info()));
}

void put_sequence(const Reply& reply, const Request& req, const std::string& name) {
  auto body =
      body_object(req, {"name", "kind", "start", "increment", "offset", "max_value", "cache"});
  if (!body) return reply.fail(body.error());
  SequenceSpec spec;
  spec.name = name;
  if (auto n = read_string(*body, "name"); !n) {
    return reply.fail(n.error());
  } else if (*n && **n != name) {
    return reply.fail(
        HttpErrc::kInvalidField,
        "field 'name' ('" + **n + "') differs from the name in the path ('" + name + "')");
  }
  auto kind = read_string(*body, "kind");
  if (!kind) return reply.fail(kind.error());
  if (*kind) {
    auto k = parse_kind(**kind);
    if (!k) return reply.fail(HttpErrc::kInvalidField, "unknown kind '" + **kind + "'");
    // Gapless and Snowflake sequences have their own issues; until they land only ticket works.
    if (*k != SequenceKind::kTicket) {
      return reply.fail(HttpErrc::kNotBuiltYet, "kind '" + **kind + "' is not built yet");
    }
    spec.kind = *k;
  }
  auto start = read_id(*body, "start");
  auto max_value = read_id(*body, "max_value");
  auto increment = read_integer(*body, "increment", 1, 65535);
  auto offset = read_integer(*body, "offset", 1, 65535);
  auto cache = read_integer(*body, "cache", 1, std::uint64_t{1} << 53);
  for (const auto* r : {&start, &max_value, &increment, &offset, &cache}) {
    if (!*r) return reply.fail(r->error());
  }
  if (*start) spec.start = **start;
  if (*max_value) spec.max_value = **max_value;
  if (*increment) spec.increment = **increment;
  if (*offset) spec.offset = **offset;
  if (*cache) spec.cache = **cache;
  reply.deps().tickets.create(spec, CreateOptions{}, [reply, name](DetailedResult<void> r) {
    if (!r) return reply.fail(r.error());
    auto seq = reply.deps().tickets.find(name);
    if (!seq) return reply.fail(unknown_sequence(name));  // dropped right after creation
    reply.json(status::created, sequence_json(seq->info()));
  });
}

void patch_sequence(const Reply& reply, const Request& req, const std::string& name) {
  auto body = body_object(req, {"next"});
  if (!body) return reply.fail(body.error());
  auto next = read_id(*body, "next");
  if (!next) return reply.fail(next.error());
  if (!*next) return reply.fail(HttpErrc::kInvalidField, "field 'next' is required");
  auto seq = reply.deps().tickets.find(name);
  if (!seq) return reply.fail(unknown_sequence(name));
  // The engine treats a smaller target as a no-op (as MySQL does); over HTTP a backwards move
  // is almost certainly a mistake, so it is refused. A concurrent issue between this check and
  // advance_to can only make the target smaller than the next value, which is still safe.
  const auto before = seq->info();
  if (!before.exhausted && **next < before.next_value) {
    return reply.fail(TicketErrc::kInvalidArgument,
                      "next " + std::to_string(**next) + " is below the next value " +
                          std::to_string(before.next_value) + " of '" + name +
                          "': a sequence never moves back");
  }
  reply.deps().tickets.advance_to(name, **next, [reply, seq](DetailedResult<Block> r) {
    if (!r) return reply.fail(r.error());
    reply.json(status::ok, sequence_json(seq->info()));
  });
}

void delete_sequence(const Reply& reply, const std::string& name) {
  reply.deps().tickets.drop(name, [reply](DetailedResult<void> r) {
    if (!r) return reply.fail(r.error());
    reply.no_content();
  });
}

// POST /v1/sequences/{name}/next on a `kind: uuidv7` sequence: canonical UUID strings, each
// sorting after the previous one.
void post_next_uuidv7(const Reply& reply, const std::string& name, UuidV7Generator& generator,
                      std::uint64_t count) {
  json::array ids;
  ids.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) ids.push_back(json::value(to_string(generator.next())));
  reply.deps().metrics.ids_issued(name, kFrontend, count);
  reply.json(status::ok, json::object{{"sequence", name}, {"ids", std::move(ids)}});
}

void post_next(const Reply& reply, const Request& req, const std::string& name) {
  auto body = body_object(req, {"count"});
  if (!body) return reply.fail(body.error());
  auto count = read_integer(*body, "count", 1, kMaxIdsPerRequest);
  if (!count) return reply.fail(count.error());
  const std::uint64_t n = count->value_or(1);
  if (auto uuids = reply.deps().tickets.find_uuidv7(name)) {
    return post_next_uuidv7(reply, name, *uuids, n);
  }
  reply.deps().tickets.next(name, n, [reply, name](DetailedResult<Block> r) {
    if (!r) return reply.fail(r.error());
    reply.deps().metrics.ids_issued(name, kFrontend, r->count);
    json::array ids;
    ids.reserve(r->count);
    for (std::uint64_t i = 0; i < r->count; ++i) {
      ids.push_back(json::value(std::to_string(r->first + i * r->step)));
    }
    reply.json(status::ok, json::object{{"sequence", name}, {"ids", std::move(ids)}});
  });
}

DetailedResult<void> check_holder(const std::string& holder) {
  if (holder.size() > kMaxHolderLength) {
    return Error{HttpErrc::kInvalidField,
                 "'holder' must be at most " + std::to_string(kMaxHolderLength) + " bytes"};
  }
  for (unsigned char c : holder) {
    if (c < 0x20 || c == 0x7f) {
      return Error{HttpErrc::kInvalidField, "'holder' must not contain control characters"};
    }
  }
  return {};
}

void post_block(const Reply& reply, const Request& req, const std::string& name) {
  auto body = body_object(req, {"size", "holder"});
  if (!body) return reply.fail(body.error());
  auto size = read_integer(*body, "size", 1, reply.deps().options.max_block_size);
  if (!size) return reply.fail(size.error());
  if (!*size) return reply.fail(HttpErrc::kInvalidField, "field 'size' is required");
  auto holder = read_string(*body, "holder");
  if (!holder) return reply.fail(holder.error());
  std::string h = holder->value_or("");
  if (auto ok = check_holder(h); !ok) return reply.fail(ok.error());
  // One durable write before the reply: the block's record goes into the commit of the
  // ceiling that covers it, so the block is never handed out unrecorded.
  reply.deps().leases.lease(name, **size, std::move(h), [reply, name](DetailedResult<Lease> lease) {
    if (!lease) return reply.fail(lease.error());
    reply.deps().metrics.ids_issued(name, kFrontend, lease->block.count);
    reply.deps().metrics.block_leased(name, kFrontend, lease->block.count);
    reply.json(status::created, lease_json(*lease));
  });
}

void get_blocks(const Reply& reply, const Target& t) {
  if (auto r = reject_unknown_query(t, {"limit"}); !r) return reply.fail(r.error());
  std::size_t limit = kDefaultLeaseListLimit;
  if (auto it = t.query.find("limit"); it != t.query.end()) {
    auto n = parse_decimal(it->second);
    if (!n || *n < 1 || *n > kMaxLeaseListLimit) {
      return reply.fail(HttpErrc::kInvalidField,
                        "'limit' must be an integer in 1.." + std::to_string(kMaxLeaseListLimit));
    }
    limit = *n;
  }
  if (!reply.deps().tickets.exists(t.name)) return reply.fail(unknown_sequence(t.name));
  // Read off the I/O thread: with the etcd engine the read is a network call.
  reply.deps().leases.recent(
      t.name, limit, [reply, name = t.name](DetailedResult<std::vector<Lease>> leases) {
        if (!leases) return reply.fail(leases.error());
        json::array list;
        for (const auto& l : *leases) list.push_back(lease_json(l));
        reply.json(status::ok, json::object{{"sequence", name}, {"leases", std::move(list)}});
      });
}

// --- gapless reservations ------------------------------------------------------------------

DetailedResult<std::shared_ptr<GaplessSequence>> gapless(const Reply& reply,
                                                         const std::string& name) {
  if (auto g = reply.deps().tickets.find_gapless(name)) return g;
  if (reply.deps().tickets.exists(name)) {
    return Error{TicketErrc::kWrongKind,
                 "sequence '" + name + "' is not gapless: reservations are for gapless sequences"};
  }
  return unknown_sequence(name);
}

std::string number_of(const std::string& reservation_id) {
  return reservation_id.substr(0, reservation_id.find('-'));
}

void post_reservation(const Reply& reply, const Request& req, const std::string& name) {
  auto g = gapless(reply, name);
  if (!g) return reply.fail(g.error());
  auto body = body_object(req, {"holder", "ttl_ms"});
  if (!body) return reply.fail(body.error());
  auto holder = read_string(*body, "holder");
  if (!holder) return reply.fail(holder.error());
  std::string h = holder->value_or("http");
  if (auto ok = check_holder(h); !ok) return reply.fail(ok.error());
  const auto max_ttl = static_cast<std::uint64_t>((*g)->options().max_reservation_ttl_ms);
  auto ttl = read_integer(*body, "ttl_ms", 1, max_ttl);
  if (!ttl) return reply.fail(ttl.error());
  (*g)->reserve(std::move(h), static_cast<std::int64_t>(ttl->value_or(0)),
                [reply, name](DetailedResult<Reservation> r) {
                  if (!r) return reply.fail(r.error());
                  reply.deps().metrics.ids_issued(name, kFrontend, 1);
                  reply.json(status::created,
                             json::object{{"sequence", name},
                                          {"reservation_id", r->id},
                                          {"id", std::to_string(r->number)},
                                          {"holder", r->holder},
                                          {"expires_at", format_utc_ms(r->expires_at_unix_ms)}});
                });
}

void post_commit(const Reply& reply, const Request& req, const Target& t, bool as_void) {
  auto g = gapless(reply, t.name);
  if (!g) return reply.fail(g.error());
  std::string reason;
  if (as_void) {
    auto body = body_object(req, {"reason"});
    if (!body) return reply.fail(body.error());
    auto r = read_string(*body, "reason");
    if (!r) return reply.fail(r.error());
    if (!*r || (*r)->empty()) {
      return reply.fail(HttpErrc::kInvalidField, "field 'reason' is required to void a number");
    }
    if ((*r)->size() > 1024) {
      return reply.fail(HttpErrc::kInvalidField, "'reason' must be at most 1024 bytes");
    }
    reason = **r;
  } else if (!req.body().empty()) {
    auto body = body_object(req, {});
    if (!body) return reply.fail(body.error());
  }
  auto answer = [reply, rid = t.sub, name = t.name, as_void, reason](DetailedResult<void> r) {
    if (!r) return reply.fail(r.error());
    json::object o{{"sequence", name},
                   {"reservation_id", rid},
                   {"id", number_of(rid)},
                   {"status", as_void ? "void" : "committed"}};
    if (as_void) o["reason"] = reason;
    reply.json(status::ok, o);
  };
  if (as_void) return (*g)->commit_void(t.sub, reason, std::move(answer));
  (*g)->commit(t.sub, std::move(answer));
}

void delete_reservation(const Reply& reply, const Target& t) {
  auto g = gapless(reply, t.name);
  if (!g) return reply.fail(g.error());
  (*g)->release(t.sub, [reply](DetailedResult<void> r) {
    if (!r) return reply.fail(r.error());
    reply.no_content();
  });
}

// ---- worker pools: /v1/workers/{pool}[/leases[/{id}[/keepalive]]] ----

Error unknown_pool(std::string_view pool) {
  return Error{WorkerErrc::kUnknownPool, "worker pool '" + std::string(pool) + "' does not exist"};
}

// The optional {"high_water_ms": n} body of keepalive and release.
DetailedResult<std::optional<std::int64_t>> read_high_water(const Request& req) {
  auto body = body_object(req, {"high_water_ms"});
  if (!body) return body.error();
  auto hwm = read_integer(*body, "high_water_ms", 0, kMaxJsonSafeInteger);
  if (!hwm) return hwm.error();
  if (!*hwm) return std::optional<std::int64_t>{};
  return std::optional<std::int64_t>{static_cast<std::int64_t>(**hwm)};
}

void get_worker_pool(const Reply& reply, const std::string& pool) {
  auto* workers = reply.deps().workers;
  auto status = workers != nullptr ? workers->status(pool) : std::nullopt;
  if (!status) return reply.fail(unknown_pool(pool));
  reply.json(status::ok, worker_pool_json(*status));
}

void post_worker_lease(const Reply& reply, const Request& req, const std::string& pool) {
  auto* workers = reply.deps().workers;
  auto spec = workers != nullptr ? workers->spec(pool) : std::nullopt;
  if (!spec) return reply.fail(unknown_pool(pool));
  auto body = body_object(req, {"holder", "ttl_s"});
  if (!body) return reply.fail(body.error());
  auto holder = read_string(*body, "holder");
  if (!holder) return reply.fail(holder.error());
  if (!*holder || (*holder)->empty()) {
    return reply.fail(HttpErrc::kInvalidField, "field 'holder' is required (who takes the lease)");
  }
  if (auto ok = check_holder(**holder); !ok) return reply.fail(ok.error());
  auto ttl_s = read_integer(*body, "ttl_s", static_cast<std::uint64_t>(spec->min_ttl_ms / 1000),
                            static_cast<std::uint64_t>(spec->max_ttl_ms / 1000));
  if (!ttl_s) return reply.fail(ttl_s.error());
  std::optional<std::int64_t> ttl_ms;
  if (*ttl_s) ttl_ms = static_cast<std::int64_t>(**ttl_s) * 1000;
  workers->acquire(pool, std::move(**holder), ttl_ms, [reply](DetailedResult<PoolLease> lease) {
    if (!lease) return reply.fail(lease.error());
    reply.json(status::created, worker_lease_json(*lease));
  });
}

void post_worker_keepalive(const Reply& reply, const Request& req, const Target& t) {
  auto* workers = reply.deps().workers;
  if (workers == nullptr) return reply.fail(unknown_pool(t.name));
  auto hwm = read_high_water(req);
  if (!hwm) return reply.fail(hwm.error());
  workers->keepalive(t.name, t.lease_id, *hwm, [reply](DetailedResult<PoolLease> lease) {
    if (!lease) return reply.fail(lease.error());
    reply.json(status::ok, worker_lease_json(*lease));
  });
}

void delete_worker_lease(const Reply& reply, const Request& req, const Target& t) {
  auto* workers = reply.deps().workers;
  if (workers == nullptr) return reply.fail(unknown_pool(t.name));
  auto hwm = read_high_water(req);
  if (!hwm) return reply.fail(hwm.error());
  workers->release(t.name, t.lease_id, *hwm, [reply](DetailedResult<PoolLease> lease) {
    if (!lease) return reply.fail(lease.error());
    reply.no_content();
  });
}

json::value optional_id(const std::optional<std::uint64_t>& v) {
  if (!v) return nullptr;
  return json::value(std::to_string(*v));
}

void get_audit(const Reply& reply, const std::string& name) {
  auto g = gapless(reply, name);
  if (!g) return reply.fail(g.error());
  const auto a = (*g)->audit();
  json::array pending, released, voids, holes;
  for (const auto& p : a.pending) {
    pending.push_back(json::object{{"reservation_id", p.reservation.id},
                                   {"id", std::to_string(p.reservation.number)},
                                   {"holder", p.reservation.holder},
                                   {"expires_at", format_utc_ms(p.reservation.expires_at_unix_ms)},
                                   {"state", p.state}});
  }
  for (auto n : a.released) released.push_back(json::value(std::to_string(n)));
  for (const auto& [n, reason] : a.voids) {
    voids.push_back(json::object{{"id", std::to_string(n)}, {"reason", reason}});
  }
  for (auto n : a.holes) holes.push_back(json::value(std::to_string(n)));
  reply.json(status::ok, json::object{{"sequence", name},
                                      {"kind", "gapless"},
                                      {"order", order_name(a.order)},
                                      {"committed_through", optional_id(a.committed_through)},
                                      {"high", optional_id(a.high)},
                                      {"committed", a.committed},
                                      {"pending", std::move(pending)},
                                      {"released", std::move(released)},
                                      {"voids", std::move(voids)},
                                      {"holes", std::move(holes)},
                                      {"waiting", a.waiting},
                                      {"commits", a.commits},
                                      {"releases", a.releases},
                                      {"expiries", a.expiries},
                                      {"queue_timeouts", a.queue_timeouts}});
}

void get_metrics(const Reply& reply) {
  Response res{status::ok, 11};
  res.set(field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  res.body() = reply.deps().metrics.serialize();
  res.prepare_payload();
  reply.send(std::move(res));
}

json::value address_json(const InstanceAddress& a) {
  if (a.mysql.empty() && a.http.empty()) return nullptr;
  return json::object{{"mysql", a.mysql}, {"http", a.http}};
}

// GET /v1/cluster: who leads, who this is, and the leadership term (the leader key's revision).
void get_cluster(const Reply& reply) {
  const auto* gate = reply.deps().gate;
  ClusterView view;
  if (gate != nullptr) view = gate->view();
  if (gate == nullptr) view.role = Role::kLeader;
  const bool serving = gate == nullptr || gate->serving();
  reply.json(status::ok, json::object{{"role", role_name(view.role)},
                                      {"serving", serving},
                                      {"leader", address_json(view.leader)},
                                      {"self", address_json(view.self)},
                                      {"term", view.revision},
                                      {"revision", view.revision}});
}

}  // namespace

void handle_request(const HttpDeps& deps, Request req, std::function<void(Response)> done) {
  Reply reply(deps, req, std::move(done));
  auto target = parse_target(req.target());
  if (!target) return reply.fail(target.error());
  const Target& t = *target;
  reply.set_route(route_label(t.route, req.method()));

  const bool under_v1 = req.target().starts_with("/v1/") || t.route == Route::kSequences;
  const bool needs_token =
      !deps.options.tokens.empty() &&
      (under_v1 || (t.route == Route::kMetrics && !deps.options.metrics_public));
  // Authentication comes before 404/405 so that, without a token, nothing about /v1 leaks.
  if (needs_token && !authorized(deps.options.tokens, req[field::authorization])) {
    deps.metrics.auth_failure(kFrontend);
    return reply.fail(HttpErrc::kUnauthorized,
                      "a valid 'Authorization: Bearer <token>' is required");
  }
  if (t.route == Route::kUnmatched) {
    return reply.fail(HttpErrc::kNoRoute, "no route for '" + std::string(req.target()) + "'");
  }
  if (!method_allowed(t.route, req.method())) {
    return reply.fail(Error{HttpErrc::kMethodNotAllowed,
                            "method " + std::string(req.method_string()) + " is not allowed on '" +
                                std::string(req.target()) + "'"},
                      allowed_methods(t.route));
  }
  // The session enforces the limit while reading; this covers callers that build requests.
  if (req.body().size() > deps.options.body_limit) {
    return reply.fail(
        HttpErrc::kBodyTooLarge,
        "request body is larger than " + std::to_string(deps.options.body_limit) + " bytes");
  }
  if (t.route != Route::kBlocks) {
    if (auto r = reject_unknown_query(t, {}); under_v1 && !r) return reply.fail(r.error());
  }

  const bool needs_leader = t.route == Route::kSequences || t.route == Route::kSequence ||
                            t.route == Route::kNext || t.route == Route::kBlocks ||
                            t.route == Route::kReservations || t.route == Route::kReservation ||
                            t.route == Route::kReservationCommit ||
                            t.route == Route::kReservationVoid || t.route == Route::kAudit ||
                            t.route == Route::kWorkerPool || t.route == Route::kWorkerLeases ||
                            t.route == Route::kWorkerLease || t.route == Route::kWorkerKeepalive;
  if (needs_leader && deps.gate != nullptr && !deps.gate->serving()) {
    return reply.fail(deps.gate->not_serving_error(true));
  }

  switch (t.route) {
    case Route::kHealthz:
      return reply.json(status::ok, json::object{{"status", "ok"}});
    case Route::kReadyz:
      // Only the serving leader is ready: load balancers send traffic to it alone.
      if (deps.gate != nullptr && !deps.gate->serving()) {
        return reply.fail(deps.gate->not_serving_error(true));
      }
      if (deps.storage_ready && !deps.storage_ready()) {
        return reply.fail(HttpErrc::kNotReady, "storage is not open or not writable");
      }
      return reply.json(status::ok, json::object{{"status", "ready"}});
    case Route::kMetrics:
      return get_metrics(reply);
    case Route::kSequences:
      return get_sequences(reply);
    case Route::kSequence:
      switch (req.method()) {
        case verb::get:
          return get_sequence(reply, t.name);
        case verb::put:
          return put_sequence(reply, req, t.name);
        case verb::patch:
          return patch_sequence(reply, req, t.name);
        default:
          return delete_sequence(reply, t.name);
      }
    case Route::kNext:
      return post_next(reply, req, t.name);
    case Route::kBlocks:
      if (req.method() == verb::post) return post_block(reply, req, t.name);
      return get_blocks(reply, t);
    case Route::kSnowflakeDecode:
      return get_snowflake_decode(reply, t.name);
    case Route::kReservations:
      return post_reservation(reply, req, t.name);
    case Route::kReservation:
      return delete_reservation(reply, t);
    case Route::kReservationCommit:
      return post_commit(reply, req, t, false);
    case Route::kReservationVoid:
      return post_commit(reply, req, t, true);
    case Route::kAudit:
      return get_audit(reply, t.name);
    case Route::kWorkerPool:
      return get_worker_pool(reply, t.name);
    case Route::kWorkerLeases:
      return post_worker_lease(reply, req, t.name);
    case Route::kWorkerLease:
      return delete_worker_lease(reply, req, t);
    case Route::kWorkerKeepalive:
      return post_worker_keepalive(reply, req, t);
    case Route::kCluster:
      return get_cluster(reply);
    case Route::kUnmatched:
      break;
  }
  reply.fail(HttpErrc::kNoRoute, "no route");
}

}  // namespace ticketd::http
