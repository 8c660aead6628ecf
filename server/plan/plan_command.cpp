#include "server/plan/plan_command.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/command_line.h"
#include "server/base/exit_code.h"
#include "server/base/parse_int.h"
#include "server/base/sequence_kind.h"
#include "server/base/utc_time.h"
#include "server/plan/capacity_plan.h"
#include "server/plan/plan_report.h"

namespace ticketd {

using plan::PlanInput;

namespace {

std::string usage_text() {
  const SequenceSpec defaults;
  return "usage: ticketd plan --kind KIND [--ids-per-second N] [--years Y] [--front-end "
         "mysql|http]\n"
         "                    [--engine rocksdb|etcd] [--cores N] [--servers N] [--cache N]\n"
         "                    [--start N] [--max-value N] [--external-mark] [--layout NAME]\n"
         "                    [--epoch DATE] [--time-bits N] [--worker-bits N]\n"
         "                    [--sequence-bits N] [--time-unit-ms N]\n"
         "       ticketd plan --figures\n"
         "  Capacity on paper, scaled from the figures measured on the " +
         std::to_string(plan::kReferenceCores) +
         "-core reference box\n"
         "  (--figures lists them with the bench command and date of each): IDs/s per core,\n"
         "  the servers a target needs with one spare, durable writes and fsyncs, how long a\n"
         "  counter's values or a Snowflake layout's time range last, the engine's limits.\n"
         "  One 'key: value unit' line per answer; with a target the last line is 'fits: yes'\n"
         "  or 'fits: no: why'. Exit 0 it fits (or no target), 1 it does not or no figure\n"
         "  can tell, 2 usage. See docs/capacity.md.\n"
         "  --kind KIND            " +
         kind_names_text() +
         "\n"
         "  --ids-per-second N     the target rate of one sequence\n"
         "  --years Y              how long its values must last (snowflake: counted from the\n"
         "                         epoch; uuidv7, ulid: from 1970)\n"
         "  --front-end mysql|http the clients' front end (default mysql)\n"
         "  --engine rocksdb|etcd  storage.engine (default rocksdb)\n"
         "  --cores N              cores per server (default " +
         std::to_string(plan::kReferenceCores) +
         ", the reference box's)\n"
         "  --servers N            ticket: servers running now (default 2, an odd/even pair)\n"
         "  --cache N              ticket: values per durable write (default " +
         std::to_string(defaults.cache) +
         ")\n"
         "  --start N              ticket, gapless: the first value (default " +
         std::to_string(defaults.start) +
         ")\n"
         "  --max-value N          ticket, gapless: the last value (default " +
         std::to_string(defaults.max_value) +
         ")\n"
         "  --external-mark        durability.external_mark is set: one more sync per write\n"
         "  --layout NAME          snowflake: " +
         plan::layout_names_text() +
         " (default twitter)\n"
         "  --epoch DATE           snowflake: YYYY-MM-DDTHH:MM:SSZ (default: the layout's)\n"
         "  --time-bits N, --worker-bits N, --sequence-bits N, --time-unit-ms N\n"
         "                         snowflake: the layout's widths (their sum is 63) and tick\n";
}

// Which kinds an option means something for; the others refuse it by name. An option without a
// row here means something for every kind.
enum class Scope { kCache, kValueSpace, kRestride, kLayout };

struct FlagScope {
  std::string_view flag;
  Scope scope;
};

constexpr FlagScope kScopes[] = {
    {"--cache", Scope::kCache},          {"--start", Scope::kValueSpace},
    {"--max-value", Scope::kValueSpace}, {"--servers", Scope::kRestride},
    {"--layout", Scope::kLayout},        {"--epoch", Scope::kLayout},
    {"--time-bits", Scope::kLayout},     {"--worker-bits", Scope::kLayout},
    {"--sequence-bits", Scope::kLayout}, {"--time-unit-ms", Scope::kLayout},
};

bool applies(Scope scope, SequenceKind kind) {
  switch (scope) {
    case Scope::kCache:
      return kind_takes(kind, kind_key::kCache);
    case Scope::kValueSpace:
      return kind_takes(kind, kind_key::kMaxValue);
    case Scope::kRestride:
      return plan::plan_restrides(kind);
    case Scope::kLayout:
      return plan::plan_reads_layout(kind);
  }
  return false;
}

// The words as given, before they become a PlanInput.
struct Arguments {
  std::vector<std::string> given;  // every flag taken, in order
  bool figures = false;
  std::optional<SequenceKind> kind;
  PlanInput input;
  std::string layout = "twitter";
  std::optional<int> time_bits, worker_bits, sequence_bits;
  std::optional<std::int64_t> time_unit_ms, epoch_unix_ms;
};

template <class T, class Out>
CommandOption number_option(std::string_view flag, Out& out) {
  return {flag, true, [flag, &out](const std::string& value) {
            const auto parsed = parse_int<T>(value);
            if (!parsed) {
              return std::string(flag) + " takes a whole number (" + std::to_string(sizeof(T) * 8) +
                     " bits), not '" + value + "'";
            }
            out = *parsed;
            return std::string();
          }};
}

template <class T>
CommandOption choice_option(std::string_view flag, std::string what, T& out,
                            std::optional<typename T::value_type> (*parse)(std::string_view)) {
  return {flag, true, [flag, what = std::move(what), &out, parse](const std::string& value) {
            out = parse(value);
            if (!out) return std::string(flag) + " must be " + what + ", not '" + value + "'";
            return std::string();
          }};
}

std::vector<CommandOption> plan_options(Arguments& a) {
  PlanInput& in = a.input;
  std::vector<CommandOption> options = {
      choice_option("--kind", kind_names_text(), a.kind, &parse_kind),
      number_option<std::uint64_t>("--ids-per-second", in.ids_per_second),
      number_option<std::uint64_t>("--years", in.years),
      {"--front-end", true,
       [&in](const std::string& v) {
         const auto parsed = plan::parse_front_end(v);
         if (!parsed) return "--front-end must be mysql or http, not '" + v + "'";
         in.front_end = *parsed;
         return std::string();
       }},
      {"--engine", true,
       [&in](const std::string& v) {
         const auto parsed = plan::parse_engine(v);
         if (!parsed) return "--engine must be rocksdb or etcd, not '" + v + "'";
         in.engine = *parsed;
         return std::string();
       }},
      number_option<std::uint64_t>("--cores", in.cores),
      number_option<std::uint64_t>("--servers", in.servers),
      number_option<std::uint64_t>("--cache", in.spec.cache),
      number_option<std::uint64_t>("--start", in.spec.start),
      number_option<std::uint64_t>("--max-value", in.spec.max_value),
      switch_option("--external-mark", in.external_mark),
      switch_option("--figures", a.figures),
      text_option("--layout", a.layout),
      {"--epoch", true,
       [&a](const std::string& v) {
         a.epoch_unix_ms = parse_utc_ms(v);
         if (!a.epoch_unix_ms) return "--epoch must be YYYY-MM-DDTHH:MM:SSZ, not '" + v + "'";
         return std::string();
       }},
      number_option<int>("--time-bits", a.time_bits),
      number_option<int>("--worker-bits", a.worker_bits),
      number_option<int>("--sequence-bits", a.sequence_bits),
      number_option<std::int64_t>("--time-unit-ms", a.time_unit_ms),
  };
  // Every flag is recorded as it is taken, so that a flag the kind does not read is refused.
  for (CommandOption& option : options) {
    option.apply = [&a, flag = option.flag, inner = std::move(option.apply)](const std::string& v) {
      a.given.emplace_back(flag);
      return inner(v);
    };
  }
  return options;
}

// The flags taken that the kind does not read, and the Snowflake layout they make.
std::string finish(Arguments& a) {
  const SequenceKind kind = *a.kind;
  for (const std::string& flag : a.given) {
    const auto row = std::find_if(std::begin(kScopes), std::end(kScopes),
                                  [&](const FlagScope& s) { return s.flag == flag; });
    if (row != std::end(kScopes) && !applies(row->scope, kind)) {
      return flag + " is not used by kind " + std::string(kind_name(kind));
    }
  }
  PlanInput& in = a.input;
  in.kind = kind;
  const auto layout = plan::named_layout(a.layout);
  if (!layout) return "--layout must be " + plan::layout_names_text() + ", not '" + a.layout + "'";
  in.layout = *layout;
  in.layout_name = a.layout;
  if (a.time_bits) in.layout.time_bits = *a.time_bits;
  if (a.worker_bits) in.layout.worker_bits = *a.worker_bits;
  if (a.sequence_bits) in.layout.sequence_bits = *a.sequence_bits;
  if (a.time_unit_ms) in.layout.time_unit_ms = *a.time_unit_ms;
  if (a.epoch_unix_ms) in.layout.epoch_unix_ms = *a.epoch_unix_ms;
  in.layout_changed =
      a.time_bits || a.worker_bits || a.sequence_bits || a.time_unit_ms || a.epoch_unix_ms;
  return plan::check_input(in);
}

void print(std::FILE* out, const std::vector<plan::PlanLine>& lines) {
  for (const auto& line : lines) {
    std::fprintf(out, "%s: %s\n", line.key.c_str(), line.value.c_str());
  }
}

}  // namespace

int plan_command(int argc, char** argv, std::FILE* out, std::FILE* err) {
  const auto refused = [err](const std::string& why) {
    std::fprintf(err, "ticketd plan: %s (see ticketd plan --help)\n", why.c_str());
    return exit_status(ExitCode::kRefused);
  };
  const std::span words(argv + std::min(argc, 2), argv + argc);
  if (has_word(words, {"--help", "-h"})) {
    std::fputs(usage_text().c_str(), out);
    return exit_status(ExitCode::kOk);
  }
  Arguments a;
  const std::vector<CommandOption> options = plan_options(a);
  if (auto problem = parse_command_line(words, options); !problem.empty()) return refused(problem);
  if (a.figures) {
    if (a.given.size() > 1) return refused("--figures takes no other option");
    print(out, plan::figure_lines());
    return exit_status(ExitCode::kOk);
  }
  if (!a.kind) return refused("--kind is required (" + kind_names_text() + ")");
  if (auto problem = finish(a); !problem.empty()) return refused(problem);
  const plan::PlanReport report = plan::make_plan(a.input);
  print(out, report.lines);
  return exit_status(report.misses.empty() ? ExitCode::kOk : ExitCode::kFailed);
}

}  // namespace ticketd
