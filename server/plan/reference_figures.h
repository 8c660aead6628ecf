// The figures measured on the reference box that `ticketd plan` scales from: one table, each row
// naming the bench command, its date and the document that quotes it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "server/base/sequence_kind.h"

namespace ticketd::plan {

/// The reference box: the 2-core development machine every quoted run used (docs/comparison.md,
/// docs/ha.md, docs/architecture.md "Testing"). A figure per core is a figure of it / 2.
inline constexpr std::uint64_t kReferenceCores = 2;

/// The front end a client takes IDs through.
enum class FrontEnd { kMysql, kHttp };
/// Where the counters live (storage.engine).
enum class Engine { kRocksDb, kEtcd };

[[nodiscard]] std::string_view front_end_name(FrontEnd front_end);
[[nodiscard]] std::optional<FrontEnd> parse_front_end(std::string_view name);
[[nodiscard]] std::string_view engine_name(Engine engine);
[[nodiscard]] std::optional<Engine> parse_engine(std::string_view name);

/// What limited a measured run, so the plan can say how far to trust it.
enum class Bound {
  kBox,      // ticketd and its load generator shared the box's cores: ticketd's share of them
  kClients,  // the Python clients were slower than ticketd: the figure is a floor
};

/// What a row measures.
enum class Measure {
  kIdsPerSecond,   // IDs (or gapless commits) per second on the whole reference box
  kSyncedWriteUs,  // the mean latency of one synced write of the engine, in microseconds
};

/// One measured figure. A plain value; the table is constant.
struct ReferenceFigure {
  Measure measure;
  SequenceKind kind;   // kIdsPerSecond rows only
  FrontEnd front_end;  // kIdsPerSecond rows only
  Engine engine;
  std::uint64_t value;  // IDs/s on kReferenceCores cores, or microseconds
  Bound bound;
  std::string_view command;   // the bench command line that printed it
  std::string_view date;      // when the quoted run was made (or first quoted)
  std::string_view source;    // the document that quotes it
  std::string_view workload;  // what was measured, in a few words
};

/// Every row, IDs/s rows first.
[[nodiscard]] std::span<const ReferenceFigure> reference_figures();

/// The IDs/s row of `kind` over `front_end` on `engine`; the row measured on the other engine
/// when there is none on this one; nullptr when neither was measured.
[[nodiscard]] const ReferenceFigure* find_ids_figure(SequenceKind kind, FrontEnd front_end,
                                                     Engine engine);
/// The synced-write row of `engine` (every engine has one).
[[nodiscard]] const ReferenceFigure& synced_write_figure(Engine engine);

}  // namespace ticketd::plan
