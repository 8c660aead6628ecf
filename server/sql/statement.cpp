#include "server/sql/statement.h"

#include <array>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace ticketd::sql {
namespace {

std::string render(const TableName& t) {
  return t.schema.empty() ? t.name : t.schema + "." + t.name;
}

std::string render(const Literal& l) {
  switch (l.kind) {
    case LiteralKind::kNull:
      return "null";
    case LiteralKind::kInteger:
      return "int:" + std::to_string(l.integer);
    case LiteralKind::kDecimal:
      return "dec:" + l.text;
    case LiteralKind::kString:
      return "str:'" + l.text + "'";
    case LiteralKind::kWord:
      return "word:" + l.text;
    case LiteralKind::kDefault:
      return "default";
  }
  return "?";
}

std::string_view scope_prefix(VariableScope scope) {
  switch (scope) {
    case VariableScope::kDefault:
      return "";
    case VariableScope::kSession:
      return "session.";
    case VariableScope::kGlobal:
      return "global.";
    case VariableScope::kPersist:
      return "persist.";
    case VariableScope::kPersistOnly:
      return "persist_only.";
  }
  return "";
}

std::string_view scope_name(VariableScope scope) {
  std::string_view prefix = scope_prefix(scope);
  prefix.remove_suffix(prefix.empty() ? 0 : 1);
  return prefix;
}

template <class T, class F>
std::string join(const std::vector<T>& items, std::string_view separator, F&& render_item) {
  std::string out;
  for (const T& item : items) {
    if (!out.empty()) out += separator;
    out += render_item(item);
  }
  return out;
}

// Builds "kind key=value flag ..." lines.
class Line {
 public:
  explicit Line(std::string_view kind) : out_(kind) {}
  Line& add(std::string_view key, std::string_view value) {
    out_ += ' ';
    out_ += key;
    out_ += '=';
    out_ += value;
    return *this;
  }
  template <class T>
  Line& add(std::string_view key, const std::optional<T>& value) {
    if (!value) return *this;
    if constexpr (std::is_same_v<T, std::string>) {
      return add(key, *value);
    } else {
      return add(key, std::to_string(*value));
    }
  }
  Line& flag(std::string_view name, bool on) {
    if (on) {
      out_ += ' ';
      out_ += name;
    }
    return *this;
  }
  [[nodiscard]] std::string str() const { return out_; }

 private:
  std::string out_;
};

std::string render(const ShowFilter& f) {
  std::string out;
  if (f.like) out += " like='" + *f.like + "'";
  if (f.has_where) {
    out += " where=" + f.where_column + " in(" +
           join(f.where_values, ",", [](const std::string& v) { return v; }) + ")";
  }
  return out;
}

std::string render(const SelectItem& item) {
  std::string kind;
  switch (item.kind) {
    case SelectItemKind::kLiteral:
      kind = "literal:" + render(item.literal);
      break;
    case SelectItemKind::kSystemVariable:
      kind = "sysvar:" + std::string(scope_prefix(item.scope)) + item.variable;
      break;
    case SelectItemKind::kUserVariable:
      kind = "uservar:" + item.variable;
      break;
    case SelectItemKind::kLastInsertId:
      kind = "last_insert_id";
      break;
    case SelectItemKind::kDatabase:
      kind = "database";
      break;
    case SelectItemKind::kVersion:
      kind = "version";
      break;
    case SelectItemKind::kUser:
      kind = "user";
      break;
    case SelectItemKind::kCurrentUser:
      kind = "current_user";
      break;
    case SelectItemKind::kConnectionId:
      kind = "connection_id";
      break;
    case SelectItemKind::kNow:
      kind = "now";
      break;
    case SelectItemKind::kUtcTimestamp:
      kind = "utc_timestamp";
      break;
    case SelectItemKind::kUuidV7:
      kind = "uuid_v7";
      break;
    case SelectItemKind::kUlid:
      kind = "ulid";
      break;
    case SelectItemKind::kNextValue:
      kind = "nextval:" + render(item.sequence);
      break;
    case SelectItemKind::kLastValue:
      kind = "lastval:" + render(item.sequence);
      break;
    case SelectItemKind::kSetValue:
      kind = "setval:" + render(item.sequence) + "," + std::to_string(item.setval_value) + "," +
             (item.setval_is_used ? "1" : "0") + "," + std::to_string(item.setval_round);
      break;
  }
  if (item.fractional_seconds > 0) kind += ":" + std::to_string(item.fractional_seconds);
  std::string out = "[" + kind + " " + item.text;
  if (item.alias) out += " as " + *item.alias;
  return out + "]";
}

std::string render(const SequenceOptions& o) {
  Line line("");
  line.add("start", o.start)
      .add("increment", o.increment)
      .add("minvalue", o.min_value)
      .flag("nominvalue", o.no_min_value)
      .add("maxvalue", o.max_value)
      .flag("nomaxvalue", o.no_max_value)
      .add("cache", o.cache)
      .flag("nocycle", o.no_cycle)
      .add("engine", o.engine)
      .flag("restart", o.restart)
      .add("restart_with", o.restart_with);
  return std::move(line).str();
}

std::string render(const TableOptions& o) {
  Line line("");
  if (!o.engine.empty()) line.add("engine", o.engine);
  if (!o.charset.empty()) line.add("charset", o.charset);
  if (!o.collation.empty()) line.add("collation", o.collation);
  if (!o.comment.empty()) line.add("comment", "'" + o.comment + "'");
  for (const auto& [name, value] : o.other) line.add(name, value);
  return std::move(line).str();
}

std::string render(const ColumnDefinition& c) {
  Line line(c.name + " " + c.type);
  line.flag("unsigned", c.is_unsigned)
      .flag("not_null", !c.is_nullable)
      .flag("auto_increment", c.is_auto_increment)
      .flag("primary_key", c.is_primary_key)
      .flag("unique", c.is_unique)
      .add("default", c.default_value);
  if (!c.comment.empty()) line.add("comment", "'" + c.comment + "'");
  return std::move(line).str();
}

std::string render(const IndexDefinition& index) {
  constexpr std::array<std::string_view, 7> kKinds = {"primary", "unique",  "index", "fulltext",
                                                      "spatial", "foreign", "check"};
  std::string out(kKinds.at(static_cast<std::size_t>(index.kind)));
  if (!index.name.empty()) out += " " + index.name;
  return out + "(" + join(index.columns, ",", [](const std::string& c) { return c; }) + ")";
}

std::string render(const Assignment& a) {
  switch (a.target) {
    case AssignmentTarget::kNames:
      return "names=" + a.expr + (a.collation.empty() ? "" : " collate=" + a.collation);
    case AssignmentTarget::kCharacterSet:
      return "charset=" + a.expr;
    case AssignmentTarget::kUserVariable:
    case AssignmentTarget::kSystemVariable:
      break;
  }
  std::string out = a.target == AssignmentTarget::kUserVariable ? "@" : "";
  out += std::string(scope_prefix(a.scope)) + a.name + "=" + a.expr;
  if (a.value) out += " -> " + render(*a.value);
  return out;
}

std::string describe_one(const InsertTicket& s) {
  Line line(InsertTicket::kName);
  line.add("table", render(s.table));
  if (!s.columns.empty()) line.add("columns", join(s.columns, ",", [](auto& c) { return c; }));
  line.add("rows", std::to_string(s.rows))
      .add("values", join(s.values, ",",
                          [](const std::vector<std::string>& row) {
                            return "(" + join(row, ",", [](auto& v) { return v; }) + ")";
                          }))
      .flag("replace", s.is_replace)
      .flag("ignore", s.is_ignore)
      .add("odku", s.on_duplicate_key_update);
  return std::move(line).str();
}

std::string describe_one(const UpdateCounter& s) {
  Line line(UpdateCounter::kName);
  line.add("table", render(s.table)).add("column", s.column).add("delta", std::to_string(s.delta));
  if (s.where) line.add("where", s.where->column + "=" + render(s.where->value));
  return std::move(line).str();
}

std::string describe_one(const Select& s) {
  Line line(Select::kName);
  for (const SelectItem& item : s.items) line.flag(render(item), true);
  line.add("limit", s.limit).add("offset", s.offset);
  return std::move(line).str();
}

std::string describe_one(const SelectNextBlock& s) {
  return Line(SelectNextBlock::kName)
      .add("sequence", render(s.sequence))
      .add("count", std::to_string(s.count))
      .str();
}

std::string describe_one(const CreateSequence& s) {
  return Line(CreateSequence::kName)
             .add("name", render(s.name))
             .flag("if_not_exists", s.if_not_exists)
             .flag("or_replace", s.or_replace)
             .str() +
         render(s.options);
}

std::string describe_one(const AlterSequence& s) {
  return Line(AlterSequence::kName)
             .add("name", render(s.name))
             .flag("if_exists", s.if_exists)
             .str() +
         render(s.options);
}

std::string describe_one(const DropSequence& s) {
  return Line(DropSequence::kName)
      .add("names", join(s.names, ",", [](const TableName& t) { return render(t); }))
      .flag("if_exists", s.if_exists)
      .str();
}

std::string describe_one(const ShowCreateSequence& s) {
  return Line(ShowCreateSequence::kName).add("name", render(s.name)).str();
}

std::string describe_one(const CreateTable& s) {
  return Line(CreateTable::kName)
             .add("name", render(s.name))
             .flag("if_not_exists", s.if_not_exists)
             .add("columns", "(" + join(s.columns, "; ", [](auto& c) { return render(c); }) + ")")
             .add("indexes", "(" + join(s.indexes, "; ", [](auto& i) { return render(i); }) + ")")
             .add("auto_increment", s.auto_increment_start)
             .str() +
         render(s.options);
}

std::string describe_one(const AlterTable& s) {
  return Line(AlterTable::kName)
             .add("table", render(s.table))
             .add("auto_increment", s.auto_increment)
             .str() +
         render(s.options);
}

std::string describe_one(const DropTable& s) {
  return Line(DropTable::kName)
      .add("names", join(s.names, ",", [](const TableName& t) { return render(t); }))
      .flag("if_exists", s.if_exists)
      .str();
}

std::string describe_one(const TruncateTable& s) {
  return Line(TruncateTable::kName).add("table", render(s.table)).str();
}

std::string describe_one(const ShowTables& s) {
  Line line(ShowTables::kName);
  line.flag("full", s.full);
  if (!s.schema.empty()) line.add("schema", s.schema);
  return std::move(line).str() + render(s.filter);
}

std::string describe_one(const ShowCreateTable& s) {
  return Line(ShowCreateTable::kName).add("table", render(s.table)).str();
}

std::string describe_one(const ShowColumns& s) {
  return Line(ShowColumns::kName).add("table", render(s.table)).flag("full", s.full).str() +
         render(s.filter);
}

std::string describe_one(const ShowTableStatus& s) {
  Line line(ShowTableStatus::kName);
  if (!s.schema.empty()) line.add("schema", s.schema);
  return std::move(line).str() + render(s.filter);
}

std::string describe_one(const SetStatement& s) {
  Line line(SetStatement::kName);
  for (const Assignment& a : s.assignments) line.flag("[" + render(a) + "]", true);
  return std::move(line).str();
}

std::string describe_one(const SetTransaction& s) {
  Line line(SetTransaction::kName);
  if (s.scope != VariableScope::kDefault) line.add("scope", scope_name(s.scope));
  if (s.isolation_level) line.add("isolation", "'" + *s.isolation_level + "'");
  if (s.read_only) line.add("read_only", *s.read_only ? "1" : "0");
  return std::move(line).str();
}

template <class T>
std::string describe_scoped(const T& s) {
  Line line(T::kName);
  if (s.scope != VariableScope::kDefault) line.add("scope", scope_name(s.scope));
  return std::move(line).str() + render(s.filter);
}
std::string describe_one(const ShowVariables& s) { return describe_scoped(s); }
std::string describe_one(const ShowStatus& s) { return describe_scoped(s); }

template <class T>
std::string describe_limited(const T& s) {
  return Line(T::kName).add("limit", s.limit).add("offset", s.offset).str();
}
std::string describe_one(const ShowWarnings& s) { return describe_limited(s); }
std::string describe_one(const ShowErrors& s) { return describe_limited(s); }

std::string describe_one(const ShowDatabases& s) {
  return std::string(ShowDatabases::kName) + render(s.filter);
}
std::string describe_one(const ShowEngines&) { return std::string(ShowEngines::kName); }
std::string describe_one(const ShowCollation& s) {
  return std::string(ShowCollation::kName) + render(s.filter);
}
std::string describe_one(const ShowCharacterSet& s) {
  return std::string(ShowCharacterSet::kName) + render(s.filter);
}
std::string describe_one(const ShowProcesslist& s) {
  return Line(ShowProcesslist::kName).flag("full", s.full).str();
}
std::string describe_one(const Use& s) { return Line(Use::kName).add("schema", s.schema).str(); }
std::string describe_one(const Begin& s) {
  return Line(Begin::kName)
      .flag("read_only", s.read_only)
      .flag("consistent_snapshot", s.with_consistent_snapshot)
      .str();
}
std::string describe_one(const Commit&) { return std::string(Commit::kName); }
std::string describe_one(const Rollback&) { return std::string(Rollback::kName); }
std::string describe_one(const Do& s) { return Line(Do::kName).add("expr", s.expr).str(); }
std::string describe_one(const Kill& s) {
  return Line(Kill::kName)
      .flag("query", s.query_only)
      .add("id", std::to_string(s.connection_id))
      .str();
}

std::string_view unrecognized_name(UnrecognizedKind kind) {
  switch (kind) {
    case UnrecognizedKind::kSyntaxError:
      return "syntax_error";
    case UnrecognizedKind::kUnsupported:
      return "unsupported";
    case UnrecognizedKind::kEmptyQuery:
      return "empty_query";
    case UnrecognizedKind::kTooManyTokens:
      return "too_many_tokens";
    case UnrecognizedKind::kTooManyColumns:
      return "too_many_columns";
  }
  return "unrecognized";
}

std::string describe_one(const Unrecognized& s) {
  Line line(unrecognized_name(s.kind));
  if (s.kind == UnrecognizedKind::kEmptyQuery || s.kind == UnrecognizedKind::kTooManyTokens ||
      s.kind == UnrecognizedKind::kTooManyColumns) {
    return std::move(line).str();
  }
  line.add("near", "'" + s.near + "'");
  if (s.line != 1) line.add("line", std::to_string(s.line));
  return std::move(line).str();
}

}  // namespace

std::string_view statement_kind_name(const Statement& statement) {
  return std::visit(
      [](const auto& s) -> std::string_view {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, Unrecognized>) {
          return unrecognized_name(s.kind);
        } else {
          return T::kName;
        }
      },
      statement);
}

std::string describe(const Statement& statement) {
  return std::visit([](const auto& s) { return describe_one(s); }, statement);
}

}  // namespace ticketd::sql
