#include "server/mysql/statement_call.h"

#include <algorithm>
#include <cctype>

#include "server/mysql/error_mapping.h"
#include "server/mysql/result_columns.h"
#include "server/mysql/server_variables.h"
#include "server/sql/statement_traits.h"

namespace ticketd::mysql {

std::optional<std::string> StatementCall::resolve(const sql::TableName& table,
                                                  ErrResult& error) const {
  const std::string& db = table.schema.empty() ? session.database : table.schema;
  if (db.empty()) {
    error = to_err(StatementErrc::kNoDatabaseSelected);
    return std::nullopt;
  }
  if (db != engine.settings.database) {
    error = to_err(StatementErrc::kNoSuchTable,
                   {clip_for_message(db) + "." + clip_for_message(table.name)});
    return std::nullopt;
  }
  return table.name;
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool passes(const sql::ShowFilter& filter, std::string_view value) {
  if (filter.like) return like_match(value, *filter.like);
  if (filter.has_where) {
    return std::binary_search(filter.where_values.begin(), filter.where_values.end(),
                              lower_ascii(value));
  }
  return true;
}

ResultSetResult result_set_for(const sql::Statement& statement, const StatementCall& call) {
  ResultSetResult r;
  const ParsedStatement* parsed = call.parsed.get();
  if (parsed != nullptr && &parsed->statement != &statement) parsed = nullptr;
  if (parsed != nullptr && parsed->columns && parsed->columns->database == call.session.database) {
    r.columns = parsed->columns->columns;  // the text's columns, described before
    return r;
  }
  r.columns = result_columns(statement, call.engine.settings, call.session);
  if (parsed != nullptr && !columns_depend_on_session(statement, call.session)) {
    parsed->columns = ParsedStatement::Columns{call.session.database, r.columns};
  }
  return r;
}

ResultSetResult fixed_result_set(std::string_view kind, const StatementCall& call) {
  ResultSetResult r;
  const sql::StatementTraits* traits = sql::find_traits(kind);
  if (traits == nullptr) return r;
  std::vector<Column> columns;
  for (const auto& c : traits->columns) {
    columns.push_back(Column{std::string(c.name),
                             column_kind(sql::ResultColumn{std::string(c.name), c.type, {}, false},
                                         call.engine.settings, call.session),
                             {}});
  }
  r.columns = std::move(columns);
  return r;
}

}  // namespace ticketd::mysql
