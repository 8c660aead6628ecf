// The config loader (config::load_string) on arbitrary YAML text.
//
// Invariants: no crash, no uncaught exception (yaml-cpp's are turned into errors), no stack
// overflow on deep nesting; a config or errors, never both and never neither; every error names
// the source; loading is deterministic; a loaded config's listen addresses print as text that
// parses back to them, and the exposure check runs on it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "server/core/sequence_spec.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

void listen_round_trip(const ticketd::config::ListenAddress& a) {
  const auto back = ticketd::config::parse_listen(a.to_string());
  FUZZ_CHECK(back.has_value());
  FUZZ_CHECK(back->host == a.host && back->port == a.port);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto result = ticketd::config::load_string(text, "fuzz.yaml", ticketd::validate_name);
  FUZZ_CHECK(result.config.has_value() != !result.errors.empty());
  for (const auto& e : result.errors) FUZZ_CHECK(e.starts_with("fuzz.yaml"));

  const auto again = ticketd::config::load_string(text, "fuzz.yaml", ticketd::validate_name);
  FUZZ_CHECK(again.errors == result.errors);
  FUZZ_CHECK(again.config.has_value() == result.config.has_value());

  if (result.config) {
    const auto& c = *result.config;
    listen_round_trip(c.mysql.listen);
    listen_round_trip(c.http.listen);
    for (const auto& s : c.sequences) FUZZ_CHECK(ticketd::validate_name(s.name).empty());
    for (const auto& p : c.worker_pools) FUZZ_CHECK(ticketd::validate_name(p.name).empty());
    (void)ticketd::config::check_exposure(c);
  }
  return 0;
}
