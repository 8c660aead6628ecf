#include "server/restride/restride_command.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/command_line.h"
#include "server/base/exit_code.h"
#include "server/base/parse_int.h"
#include "server/restride/json_http_client.h"
#include "server/restride/restride_plan.h"

namespace ticketd {

namespace json = boost::json;
using restride::JsonHttpClient;
using restride::ServerState;

namespace {

constexpr const char* kUsage =
    "usage: ticketd restride --sequence NAME --servers HOST:PORT,HOST:PORT,... [--margin N]\n"
    "                        [--token-file FILE] [--ca-file FILE]\n"
    "                        [--cert-file FILE --key-file FILE] [--dry-run]\n"
    "  Moves every server (their HTTP listeners, in offset order) onto increment N = the number\n"
    "  of servers and offsets 1..N, above a floor F = the highest durable ceiling + margin\n"
    "  (default 10000000): first every server with the sequence is fenced at F (it issues\n"
    "  nothing above F on its old grid), then each is restrided above F, one at a time, while\n"
    "  the others keep serving. A server without the sequence gets it created on its grid.\n"
    "  A server is HOST:PORT (plain HTTP) or https://HOST:PORT: its certificate is checked\n"
    "  against --ca-file (else the system's CAs) and its name; --cert-file and --key-file\n"
    "  present a client certificate. The bearer token comes from --token-file or\n"
    "  $TICKETD_TOKEN; it is sent in clear to a plain-HTTP server (a warning says so when that\n"
    "  server is not on loopback). See docs/restride.md.\n";

// An address on this host only: a token sent there in clear stays on the machine.
bool is_loopback(const std::string& host) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  if (ec) return host == "localhost";
  return address.is_loopback();
}

constexpr std::uint64_t kDefaultMargin = 10000000;
constexpr int kFenceAttempts = 5;

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const auto comma = s.find(',');
    auto part = s.substr(0, comma);
    if (part.starts_with("http://")) part.remove_prefix(7);
    while (part.ends_with("/")) part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::uint64_t number(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_int64()) return static_cast<std::uint64_t>(v->as_int64());
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_string()) return parse_int<std::uint64_t>(std::string_view(v->as_string())).value_or(0);
  return 0;
}

std::string error_text(const restride::JsonResponse& r) {
  if (r.body.is_object()) {
    if (const auto* e = r.body.as_object().if_contains("error"); e && e->is_object()) {
      if (const auto* m = e->as_object().if_contains("message"); m && m->is_string()) {
        return "HTTP " + std::to_string(r.status) + ": " + std::string(m->as_string());
      }
    }
  }
  return "HTTP " + std::to_string(r.status);
}

class Run {
 public:
  Run(std::string sequence, std::vector<JsonHttpClient> clients, std::FILE* out, std::FILE* err)
      : sequence_(std::move(sequence)), clients_(std::move(clients)), out_(out), err_(err) {}

  std::optional<std::vector<ServerState>> read_all() {
    std::vector<ServerState> states;
    for (auto& c : clients_) {
      auto r = c.request("GET", path());
      if (!r) return failed(r.error().message);
      ServerState s;
      s.server = c.server();
      if (r->status == 404) {
        states.push_back(s);
        continue;
      }
      if (r->status != 200 || !r->body.is_object()) {
        return failed(c.server() + ": reading '" + sequence_ + "': " + error_text(*r));
      }
      const auto& o = r->body.as_object();
      if (const auto* k = o.if_contains("kind");
          !k || !k->is_string() || k->as_string() != "ticket") {
        return failed(c.server() + ": '" + sequence_ + "' is not a ticket sequence");
      }
      s.exists = true;
      s.increment = number(o, "increment");
      s.offset = number(o, "offset");
      s.durable_ceiling = number(o, "durable_ceiling");
      s.fence = number(o, "fence");
      s.max_value = number(o, "max_value");
      s.cache = number(o, "cache");
      s.next_value = number(o, "next_value");
      const auto* rs = o.if_contains("restrided");
      s.restrided = rs != nullptr && rs->is_bool() && rs->as_bool();
      states.push_back(s);
    }
    return states;
  }

  int run(std::uint64_t margin, bool dry_run) {
    auto states = read_all();
    if (!states) return exit_status(ExitCode::kFailed);
    const auto n = states->size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& s = (*states)[i];
      if (s.exists) {
        say("%s: grid %llu/%llu, durable ceiling %llu%s%s", s.server.c_str(), ull(s.increment),
            ull(s.offset), ull(s.durable_ceiling),
            s.fence ? (", fenced at " + std::to_string(s.fence)).c_str() : "",
            s.restrided ? ", restrided" : "");
      } else {
        say("%s: no sequence '%s' (a new server)", s.server.c_str(), sequence_.c_str());
      }
    }
    if (restride::already_on_grid(*states)) {
      say("restride: every server is already on its grid of %zu: nothing to do", n);
      return exit_status(ExitCode::kOk);
    }
    // 1. Fence every server that has the sequence at F. A server whose ceiling passed F while
    //    the fences were going up refuses its fence; then everything is read again and fenced
    //    at a higher F (raising a fence is always safe: nothing is on a new grid yet).
    std::uint64_t floor = 0;
    bool fenced = false;
    for (int attempt = 1; attempt <= kFenceAttempts && !fenced; ++attempt) {
      if (attempt > 1) {
        states = read_all();
        if (!states) return exit_status(ExitCode::kFailed);
      }
      auto f = restride::floor_above(*states, margin);
      if (!f) return fail("restride: " + f.error().message);
      floor = *f;
      say("restride: floor %llu (highest ceiling + margin %llu)", ull(floor), ull(margin));
      if (dry_run) break;
      fenced = true;
      for (std::size_t i = 0; i < n && fenced; ++i) {
        if (!(*states)[i].exists) continue;
        auto r =
            clients_[i].request("PATCH", path(), json::object{{"fence", std::to_string(floor)}});
        if (!r) return fail(r.error().message);
        if (r->status == 422) {
          say("%s: fence at %llu refused (%s); reading again", clients_[i].server().c_str(),
              ull(floor), error_text(*r).c_str());
          fenced = false;
        } else if (r->status != 200) {
          return fail(clients_[i].server() + ": fence: " + error_text(*r));
        } else {
          say("%s: fenced at %llu", clients_[i].server().c_str(), ull(floor));
        }
      }
    }
    if (dry_run) {
      for (std::size_t i = 0; i < n; ++i) {
        const auto g = restride::grid_of(i, n);
        say("%s: planned grid %llu/%llu, first value %llu", clients_[i].server().c_str(),
            ull(g.increment), ull(g.offset), ull(restride::first_above(floor, g)));
      }
      return exit_status(ExitCode::kOk);
    }
    if (!fenced)
      return fail("restride: the fences did not hold after several attempts: raise --margin");
    // 2. One server at a time onto its grid above F. The others keep serving: those not yet
    //    restrided below F (their fence), those done above it, on grids that never meet.
    const ServerState& model = *std::find_if(states->begin(), states->end(),
                                             [](const ServerState& s) { return s.exists; });
    for (std::size_t i = 0; i < n; ++i) {
      const auto g = restride::grid_of(i, n);
      const auto first = restride::first_above(floor, g);
      auto& c = clients_[i];
      if (!(*states)[i].exists) {
        json::object def{{"kind", "ticket"},
                         {"start", std::to_string(first)},
                         {"increment", g.increment},
                         {"offset", g.offset},
                         {"max_value", std::to_string(model.max_value)},
                         {"cache", model.cache}};
        auto r = c.request("PUT", path(), def);
        if (!r) return fail(r.error().message);
        if (r->status != 201) return fail(c.server() + ": create: " + error_text(*r));
        say("%s: created on grid %llu/%llu", c.server().c_str(), ull(g.increment), ull(g.offset));
      }
      // Also on a server just created: marks the grid as set by a restride, so a config that
      // still names another grid does not move it back at its next start.
      say("%s: restriding to increment %llu offset %llu above %llu", c.server().c_str(),
          ull(g.increment), ull(g.offset), ull(floor));
      json::object body{
          {"increment", g.increment}, {"offset", g.offset}, {"next", std::to_string(first)}};
      auto r = c.request("PATCH", path(), body);
      if (!r) return fail(r.error().message);
      if (r->status != 200) return fail(c.server() + ": restride: " + error_text(*r));
      say("%s: restrided to increment %llu offset %llu, next value %llu", c.server().c_str(),
          ull(g.increment), ull(g.offset),
          ull(r->body.is_object() ? number(r->body.as_object(), "next_value") : 0));
    }
    states = read_all();
    if (!states) return exit_status(ExitCode::kFailed);
    const auto problems = restride::check_after(*states, floor);
    for (const auto& p : problems) std::fprintf(err_, "restride: %s\n", p.c_str());
    if (!problems.empty()) return exit_status(ExitCode::kFailed);
    say("restride: %zu servers on increment %zu above %llu; set each server's config to its "
        "grid (increment %zu, offset 1..%zu in this order)",
        n, n, ull(floor), n, n);
    return exit_status(ExitCode::kOk);
  }

 private:
  static unsigned long long ull(std::uint64_t v) { return v; }
  std::string path() const { return "/v1/sequences/" + sequence_; }
  template <class... A>
  void say(const char* format, A... args) {
    std::fprintf(out_, format, args...);
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  std::nullopt_t failed(const std::string& message) {
    std::fprintf(err_, "restride: %s\n", message.c_str());
    return std::nullopt;
  }
  int fail(const std::string& message) {
    std::fprintf(err_, "%s\n", message.c_str());
    return exit_status(ExitCode::kFailed);
  }

  std::string sequence_;
  std::vector<JsonHttpClient> clients_;
  std::FILE* out_;
  std::FILE* err_;
};

}  // namespace

int restride_command(int argc, char** argv, std::FILE* out, std::FILE* err) {
  std::string sequence;
  std::vector<std::string> servers;
  std::string token_file;
  net::TlsClientFiles tls_files;
  std::uint64_t margin = kDefaultMargin;
  bool dry_run = false;
  const auto usage = [&](const std::string& why) {
    std::fprintf(err, "ticketd restride: %s\n%s", why.c_str(), kUsage);
    return exit_status(ExitCode::kRefused);
  };
  const std::span words(argv + 2, argv + argc);
  if (has_word(words, {"--help", "-h"})) {
    std::fputs(kUsage, out);
    return exit_status(ExitCode::kOk);
  }
  const CommandOption options[] = {
      switch_option("--dry-run", dry_run),
      text_option("--sequence", sequence),
      {"--servers", true,
       [&servers](const std::string& v) {
         servers = split(v);
         return std::string();
       }},
      text_option("--token-file", token_file),
      text_option("--ca-file", tls_files.ca_file),
      text_option("--cert-file", tls_files.cert_file),
      text_option("--key-file", tls_files.key_file),
      {"--margin", true,
       [&margin](const std::string& v) {
         auto m = parse_int<std::uint64_t>(v);
         if (!m || *m == 0) return std::string("--margin must be a positive integer");
         margin = *m;
         return std::string();
       }},
  };
  if (auto problem = parse_command_line(words, options); !problem.empty()) return usage(problem);
  if (sequence.empty()) return usage("--sequence is required");
  if (servers.empty()) return usage("--servers is required");
  if (servers.size() > 65535) return usage("at most 65535 servers");
  std::string token;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return usage("cannot read --token-file " + token_file);
    std::getline(in, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  } else if (const char* t = std::getenv("TICKETD_TOKEN"); t != nullptr) {
    token = t;
  }
  if (tls_files.cert_file.empty() != tls_files.key_file.empty()) {
    return usage("--cert-file and --key-file go together");
  }
  std::vector<net::HttpEndpoint> endpoints;
  bool any_tls = false;
  for (const auto& s : servers) {
    auto e = net::parse_http_endpoint(s, /*default_scheme_http=*/true);
    if (!e) return usage("--servers: '" + s + "' is not HOST:PORT or https://HOST:PORT");
    any_tls |= e->tls;
    endpoints.push_back(std::move(*e));
  }
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (any_tls) {
    std::string problem;
    tls = net::make_tls_client_context(tls_files, problem);
    if (!tls) return usage(problem);
  } else if (!tls_files.ca_file.empty() || !tls_files.cert_file.empty()) {
    return usage("--ca-file, --cert-file and --key-file need https:// servers");
  }
  std::vector<JsonHttpClient> clients;
  for (auto& e : endpoints) {
    if (!e.tls && !token.empty() && !is_loopback(e.host)) {
      std::fprintf(err,
                   "ticketd restride: warning: the token goes in clear to %s (plain HTTP); "
                   "use https://\n",
                   e.host.c_str());
    }
    clients.emplace_back(std::move(e), token, tls);
  }
  return Run(sequence, std::move(clients), out, err).run(margin, dry_run);
}

}  // namespace ticketd
