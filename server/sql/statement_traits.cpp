#include "server/sql/statement_traits.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <variant>

namespace ticketd::sql {
namespace {

using enum ColumnType;

constexpr FixedColumn kCreateColumns[] = {{"Table"}, {"Create Table"}};
constexpr FixedColumn kShowColumnsColumns[] = {{"Field"}, {"Type"},    {"Null"},
                                               {"Key"},   {"Default"}, {"Extra"}};
constexpr FixedColumn kTableStatusColumns[] = {{"Name"},       {"Engine"}, {"Version"},
                                               {"Row_format"}, {"Rows"},   {"Auto_increment"},
                                               {"Collation"},  {"Comment"}};
constexpr FixedColumn kNameValueColumns[] = {{"Variable_name"}, {"Value"}};
constexpr FixedColumn kWarningColumns[] = {{"Level"}, {"Code", kInteger}, {"Message"}};
constexpr FixedColumn kDatabaseColumns[] = {{"Database"}};
constexpr FixedColumn kEngineColumns[] = {{"Engine"},       {"Support"}, {"Comment"},
                                          {"Transactions"}, {"XA"},      {"Savepoints"}};
constexpr FixedColumn kCollationColumns[] = {{"Collation"}, {"Charset"},  {"Id"},
                                             {"Default"},   {"Compiled"}, {"Sortlen"}};
constexpr FixedColumn kCharsetColumns[] = {
    {"Charset"}, {"Description"}, {"Default collation"}, {"Maxlen"}};
constexpr FixedColumn kProcesslistColumns[] = {{"Id"},      {"User"}, {"Host"},  {"db"},
                                               {"Command"}, {"Time"}, {"State"}, {"Info"}};
constexpr FixedColumn kNextBlockColumns[] = {{"nextval", kUnsignedInteger}};

std::vector<ResultColumn> select_columns(const Statement& statement, const ColumnContext&) {
  std::vector<ResultColumn> out;
  for (const SelectItem& item : std::get<Select>(statement).items) {
    ResultColumn c{item.column_name(), select_item_type(item), {}, false};
    if (c.type == kVariableValue) {
      c.variable = item.variable;
      c.global = item.scope == VariableScope::kGlobal;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<ResultColumn> show_tables_columns(const Statement& statement,
                                              const ColumnContext& context) {
  const auto& st = std::get<ShowTables>(statement);
  const std::string_view db = st.schema.empty() ? context.database : st.schema;
  std::vector<ResultColumn> out{{"Tables_in_" + std::string(db), kText, {}, false}};
  if (st.full) out.push_back({"Table_type", kText, {}, false});
  return out;
}

// One row per statement kind. A new statement adds its row here; the static_assert below fails
// the build until it does.
constexpr StatementTraits kTraits[] = {
    // Tickets
    {InsertTicket::kName, LeaderNeed::kYes},
    {UpdateCounter::kName, LeaderNeed::kYes},
    {Select::kName, LeaderNeed::kWhenItCallsASequence, {}, select_columns},
    {SelectNextBlock::kName, LeaderNeed::kYes, kNextBlockColumns},
    // Sequences and tables
    {CreateSequence::kName, LeaderNeed::kYes},
    {AlterSequence::kName, LeaderNeed::kYes},
    {DropSequence::kName, LeaderNeed::kYes},
    {ShowCreateSequence::kName, LeaderNeed::kYes, kCreateColumns},
    {CreateTable::kName, LeaderNeed::kYes},
    {AlterTable::kName, LeaderNeed::kYes},
    {DropTable::kName, LeaderNeed::kYes},
    {TruncateTable::kName, LeaderNeed::kYes},
    {ShowTables::kName, LeaderNeed::kYes, {}, show_tables_columns},
    {ShowCreateTable::kName, LeaderNeed::kYes, kCreateColumns},
    {ShowColumns::kName, LeaderNeed::kYes, kShowColumnsColumns},
    {ShowTableStatus::kName, LeaderNeed::kYes, kTableStatusColumns},
    // Session: a standby answers these, so drivers connect to it and learn who leads.
    {SetStatement::kName},
    {SetTransaction::kName},
    {ShowVariables::kName, LeaderNeed::kNo, kNameValueColumns},
    {ShowStatus::kName, LeaderNeed::kNo, kNameValueColumns},
    {ShowWarnings::kName, LeaderNeed::kNo, kWarningColumns},
    {ShowErrors::kName, LeaderNeed::kNo, kWarningColumns},
    {ShowDatabases::kName, LeaderNeed::kNo, kDatabaseColumns},
    {ShowEngines::kName, LeaderNeed::kNo, kEngineColumns},
    {ShowCollation::kName, LeaderNeed::kNo, kCollationColumns},
    {ShowCharacterSet::kName, LeaderNeed::kNo, kCharsetColumns},
    {ShowProcesslist::kName, LeaderNeed::kNo, kProcesslistColumns},
    {Use::kName},
    {Begin::kName},
    {Commit::kName},
    {Rollback::kName},
    {Do::kName},
    {Kill::kName},
    {Unrecognized::kName},
};

constexpr const StatementTraits* find_row(std::string_view kind) {
  for (const auto& row : kTraits) {
    if (row.kind == kind) return &row;
  }
  return nullptr;
}

template <std::size_t... I>
constexpr bool every_kind_has_a_row(std::index_sequence<I...>) {
  return ((find_row(std::variant_alternative_t<I, Statement>::kName) != nullptr) && ...);
}
static_assert(every_kind_has_a_row(std::make_index_sequence<std::variant_size_v<Statement>>{}),
              "a Statement alternative has no row in kTraits");
static_assert(std::size(kTraits) == std::variant_size_v<Statement>,
              "kTraits has a row for a kind that is not a Statement alternative, or one twice");

bool calls_a_sequence(const Statement& statement) {
  const auto& items = std::get<Select>(statement).items;
  return std::any_of(items.begin(), items.end(), [](const SelectItem& i) {
    return i.kind == SelectItemKind::kNextValue || i.kind == SelectItemKind::kLastValue ||
           i.kind == SelectItemKind::kSetValue;
  });
}

}  // namespace

const StatementTraits& traits(const Statement& statement) {
  return *std::visit(
      [](const auto& st) {
        using T = std::decay_t<decltype(st)>;
        constexpr const StatementTraits* row = find_row(T::kName);
        return row;
      },
      statement);
}

const StatementTraits* find_traits(std::string_view kind) { return find_row(kind); }

bool needs_leader(const Statement& statement) {
  switch (traits(statement).leader) {
    case LeaderNeed::kNo:
      return false;
    case LeaderNeed::kYes:
      return true;
    case LeaderNeed::kWhenItCallsASequence:
      return calls_a_sequence(statement);
  }
  return true;
}

std::vector<ResultColumn> result_columns(const Statement& statement, const ColumnContext& context) {
  const StatementTraits& t = traits(statement);
  if (t.derive != nullptr) return t.derive(statement, context);
  std::vector<ResultColumn> out;
  out.reserve(t.columns.size());
  for (const FixedColumn& c : t.columns) out.push_back({std::string(c.name), c.type, {}, false});
  return out;
}

ColumnType select_item_type(const SelectItem& item) {
  switch (item.kind) {
    case SelectItemKind::kLiteral:
      switch (item.literal.kind) {
        case LiteralKind::kNull:
          return kNull;
        case LiteralKind::kInteger:
          return kInteger;
        default:
          return kText;
      }
    case SelectItemKind::kSystemVariable:
      return kVariableValue;
    case SelectItemKind::kLastInsertId:
    case SelectItemKind::kConnectionId:
    case SelectItemKind::kNextValue:
    case SelectItemKind::kLastValue:
    case SelectItemKind::kSetValue:
      return kUnsignedInteger;
    case SelectItemKind::kUserVariable:
    case SelectItemKind::kDatabase:
    case SelectItemKind::kVersion:
    case SelectItemKind::kUser:
    case SelectItemKind::kCurrentUser:
    case SelectItemKind::kNow:
    case SelectItemKind::kUtcTimestamp:
    case SelectItemKind::kUuidV7:
    case SelectItemKind::kUlid:
      return kText;
  }
  return kText;
}

}  // namespace ticketd::sql
