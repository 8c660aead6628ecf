// CREATE / ALTER / DROP / TRUNCATE TABLE, SHOW TABLES / COLUMNS / CREATE TABLE / TABLE STATUS,
// DESCRIBE: the table statements of the recognizer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/parse_int.h"
#include "server/sql/recognizer_parser.h"

namespace ticketd::sql::detail {

// ---- tables ----------------------------------------------------------------------------------

// Table options stored as name/value pairs without further meaning.
bool is_generic_table_option(const Token& t) {
  return is_one_of(
      t, {"ROW_FORMAT", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "AVG_ROW_LENGTH", "CHECKSUM",
          "TABLE_CHECKSUM", "DELAY_KEY_WRITE", "PACK_KEYS", "STATS_PERSISTENT", "STATS_AUTO_RECALC",
          "STATS_SAMPLE_PAGES", "COMPRESSION", "ENCRYPTION", "INSERT_METHOD", "PAGE_CHECKSUM",
          "TRANSACTIONAL", "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL"});
}

// Table options in any order, with or without '=', separated by commas or not.
bool table_options(Parser& p, std::optional<std::uint64_t>& auto_increment, TableOptions& o) {
  const auto value = [&](std::string& out) {
    p.accept_operator("=");
    std::optional<std::string> v = p.name_or_string();
    if (!v && p.peek().kind == TokenKind::kNumber) v = std::string(p.advance().text);
    if (!v) return p.fail(), false;
    out = std::move(*v);
    return true;
  };
  while (p.ok() && !p.at_statement_end()) {
    p.accept_operator(",");
    const std::size_t option = p.position();
    const bool is_default = p.accept_keyword("DEFAULT");
    if (p.accept_keyword("CHARSET") || p.accept_keywords({"CHARACTER", "SET"})) {
      value(o.charset);
    } else if (p.accept_keyword("COLLATE")) {
      value(o.collation);
    } else if (is_default) {
      p.fail();
    } else if (p.accept_keyword("ENGINE") || p.accept_keyword("TYPE")) {
      value(o.engine);
    } else if (p.accept_keyword("AUTO_INCREMENT")) {
      p.accept_operator("=");
      auto_increment = p.unsigned_integer();
      if (!auto_increment) p.fail();
    } else if (p.accept_keyword("COMMENT")) {
      p.accept_operator("=");
      std::optional<std::string> comment = p.string_literal();
      if (!comment) return p.fail(), false;
      o.comment = std::move(*comment);
    } else if (is_generic_table_option(p.peek())) {
      std::string name = to_upper(p.advance().text);
      std::string v;
      if (value(v)) o.other.emplace_back(std::move(name), std::move(v));
    } else {
      p.unsupported_from(option);
    }
  }
  return p.ok();
}

// (col [(len)] [ASC|DESC], ...) of an index; functional key parts are kept as raw text.
bool key_parts(Parser& p, std::vector<std::string>& columns) {
  if (!p.accept_operator("(")) return p.fail(), false;
  do {
    if (p.at_operator("(")) {
      const std::size_t begin = p.position();
      if (!p.skip_group()) return false;
      columns.emplace_back(p.text(begin, p.position()));
    } else {
      std::optional<std::string> column = p.identifier();
      if (!column) return p.fail(), false;
      columns.push_back(std::move(*column));
      if (p.at_operator("(") && !p.skip_group()) return false;
    }
    if (!p.accept_keyword("ASC")) p.accept_keyword("DESC");
  } while (p.accept_operator(","));
  if (!p.accept_operator(")")) return p.fail(), false;
  return true;
}

bool index_definition(Parser& p, CreateTable& table) {
  IndexDefinition index;
  if (p.accept_keyword("CONSTRAINT") &&
      !is_one_of(p.peek(), {"PRIMARY", "UNIQUE", "FOREIGN", "CHECK"})) {
    std::optional<std::string> symbol = p.identifier();
    if (!symbol) return p.fail(), false;
    index.name = std::move(*symbol);
  }
  if (p.accept_keyword("PRIMARY")) {
    if (!p.accept_keyword("KEY")) return p.fail(), false;
    index.kind = IndexKind::kPrimary;
  } else if (p.accept_keyword("UNIQUE")) {
    if (!p.accept_keyword("KEY")) p.accept_keyword("INDEX");
    index.kind = IndexKind::kUnique;
  } else if (p.accept_keyword("KEY") || p.accept_keyword("INDEX")) {
    index.kind = IndexKind::kIndex;
  } else if (p.at_keyword("FULLTEXT") || p.at_keyword("SPATIAL")) {
    index.kind = p.advance().is_keyword("FULLTEXT") ? IndexKind::kFulltext : IndexKind::kSpatial;
    if (!p.accept_keyword("KEY")) p.accept_keyword("INDEX");
  } else if (p.accept_keyword("FOREIGN")) {
    if (!p.accept_keyword("KEY")) return p.fail(), false;
    index.kind = IndexKind::kForeign;
  } else if (p.accept_keyword("CHECK")) {
    index.kind = IndexKind::kCheck;
    if (!p.at_operator("(") || !p.skip_element_rest()) return p.fail(), false;
    table.indexes.push_back(std::move(index));
    return true;
  } else {
    return p.fail(), false;
  }
  if (!p.at_operator("(") && !p.at_keyword("USING")) {
    std::optional<std::string> name = p.identifier();
    if (!name) return p.fail(), false;
    index.name = std::move(*name);
  }
  if (p.accept_keyword("USING") && !p.identifier()) return p.fail(), false;
  if (!key_parts(p, index.columns)) return false;
  table.indexes.push_back(std::move(index));
  // Index options, REFERENCES ... ON DELETE ...: nothing ticketd needs.
  return p.skip_element_rest();
}

// DEFAULT value: literal, word (CURRENT_TIMESTAMP[(n)]), or (expression).
bool column_default(Parser& p, ColumnDefinition& column) {
  const std::size_t begin = p.position();
  if (p.at_operator("(")) {
    if (!p.skip_group()) return false;
  } else if (!p.literal(false)) {
    if (p.peek().kind != TokenKind::kWord) return p.fail(), false;
    p.advance();
    if (p.at_operator("(") && !p.skip_group()) return false;
  }
  column.default_value = std::string(p.text(begin, p.position()));
  return true;
}

bool column_definition(Parser& p, CreateTable& table) {
  ColumnDefinition c;
  std::optional<std::string> name = p.identifier();
  if (!name || p.peek().kind != TokenKind::kWord) return p.fail(), false;
  c.name = std::move(*name);
  const std::size_t type_begin = p.position();
  c.type_name = to_lower(p.advance().text);
  while (p.accept_keyword("PRECISION") || p.accept_keyword("VARYING")) {
  }
  if (p.at_operator("(") && !p.skip_group()) return false;
  c.type = std::string(p.text(type_begin, p.position()));
  if (c.type_name == "serial") {  // BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
    c.is_unsigned = true;
    c.is_nullable = false;
    c.is_auto_increment = true;
    c.is_unique = true;
  }
  const auto name_follows = [&]() { return p.name_or_string().has_value() || (p.fail(), false); };
  while (p.ok() && !p.at_operator(",") && !p.at_operator(")")) {
    if (p.accept_keywords({"NOT", "NULL"})) {
      c.is_nullable = false;
    } else if (p.accept_keyword("NULL")) {
      c.is_nullable = true;
    } else if (p.accept_keyword("UNSIGNED")) {
      c.is_unsigned = true;
    } else if (is_one_of(p.peek(), {"SIGNED", "ZEROFILL", "BINARY", "ASCII", "UNICODE", "BYTE",
                                    "VISIBLE", "INVISIBLE", "VIRTUAL", "STORED", "PERSISTENT"})) {
      p.advance();
    } else if (p.accept_keyword("AUTO_INCREMENT")) {
      c.is_auto_increment = true;
    } else if (p.accept_keywords({"SERIAL", "DEFAULT", "VALUE"})) {
      c.is_auto_increment = true;
      c.is_nullable = false;
      c.is_unique = true;
    } else if (p.accept_keyword("PRIMARY")) {
      p.accept_keyword("KEY");
      c.is_primary_key = true;
    } else if (p.accept_keyword("KEY")) {
      c.is_primary_key = true;
    } else if (p.accept_keyword("UNIQUE")) {
      p.accept_keyword("KEY");
      c.is_unique = true;
    } else if (p.accept_keyword("DEFAULT")) {
      column_default(p, c);
    } else if (p.accept_keyword("COMMENT")) {
      std::optional<std::string> comment = p.string_literal();
      if (!comment) return p.fail(), false;
      c.comment = std::move(*comment);
    } else if (p.accept_keyword("COLLATE") || p.accept_keyword("CHARSET") ||
               p.accept_keywords({"CHARACTER", "SET"}) || p.accept_keyword("COLUMN_FORMAT") ||
               p.accept_keyword("STORAGE")) {
      name_follows();
    } else if (p.accept_keywords({"ON", "UPDATE"})) {
      if (p.peek().kind != TokenKind::kWord) return p.fail(), false;
      p.advance();
      if (p.at_operator("(")) p.skip_group();
    } else if (p.accept_keywords({"GENERATED", "ALWAYS", "AS"}) || p.accept_keyword("AS") ||
               p.accept_keyword("CHECK")) {
      p.skip_group();
    } else if (p.accept_keyword("CONSTRAINT")) {
      if (!p.at_keyword("CHECK")) name_follows();
    } else if (p.at_keyword("REFERENCES")) {
      p.skip_element_rest();
    } else {
      p.fail();
    }
  }
  if (!p.ok()) return false;
  table.columns.push_back(std::move(c));
  return true;
}

Statement parse_create_table(Parser& p) {
  CreateTable s;
  s.if_not_exists = p.accept_keywords({"IF", "NOT", "EXISTS"});
  std::optional<TableName> name = p.table_name();
  if (!name) return p.fail();
  s.name = std::move(*name);
  if (p.at_keyword("LIKE") || (p.at_operator("(") && p.at_keyword("LIKE", 1)) ||
      p.at_keyword("AS") || p.at_keyword("SELECT")) {
    return p.unsupported_from(p.position());
  }
  if (!p.accept_operator("(")) return p.fail();
  do {
    const bool is_index = p.peek().kind == TokenKind::kWord &&
                          is_one_of(p.peek(), {"PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT",
                                               "SPATIAL", "CONSTRAINT", "FOREIGN", "CHECK"});
    if (!(is_index ? index_definition(p, s) : column_definition(p, s))) return p.fail();
  } while (p.accept_operator(","));
  if (!p.accept_operator(")")) return p.fail();
  table_options(p, s.auto_increment_start, s.options);
  return p.finish(std::move(s));
}

Statement parse_alter_table(Parser& p) {
  AlterTable s;
  std::optional<TableName> table = p.table_name();
  if (!table) return p.fail();
  s.table = std::move(*table);
  table_options(p, s.auto_increment, s.options);
  return p.finish(std::move(s));
}

Statement parse_drop_table(Parser& p) {
  DropTable s;
  s.if_exists = p.accept_keywords({"IF", "EXISTS"});
  std::optional<std::vector<TableName>> names = p.table_names();
  if (!names) return p.fail();
  s.names = std::move(*names);
  if (!p.accept_keyword("RESTRICT")) p.accept_keyword("CASCADE");
  return p.finish(std::move(s));
}

Statement parse_truncate(Parser& p) {
  p.accept_keyword("TABLE");
  std::optional<TableName> table = p.table_name();
  if (!table) return p.fail();
  return p.finish(TruncateTable{std::move(*table)});
}

Statement parse_show_tables(Parser& p, bool full) {
  ShowTables s;
  s.full = full;
  if (from_schema(p, s.schema)) show_filter(p, s.filter);
  return p.finish(std::move(s));
}

Statement parse_show_create_table(Parser& p) {
  std::optional<TableName> table = p.table_name();
  if (!table) return p.fail();
  return p.finish(ShowCreateTable{std::move(*table)});
}

Statement parse_show_columns(Parser& p, bool full) {
  ShowColumns s;
  s.full = full;
  if (!p.accept_keyword("FROM") && !p.accept_keyword("IN")) return p.fail();
  std::optional<TableName> table = p.table_name();
  if (!table) return p.fail();
  s.table = std::move(*table);
  if (from_schema(p, s.table.schema)) show_filter(p, s.filter);
  return p.finish(std::move(s));
}

// DESCRIBE t [column | 'pattern']; DESCRIBE/EXPLAIN of a query is unsupported.
Statement parse_describe(Parser& p) {
  const std::size_t start = p.position() - 1;
  if (p.peek().kind != TokenKind::kWord && p.peek().kind != TokenKind::kQuotedIdentifier) {
    return p.unsupported_from(start);
  }
  if (is_one_of(p.peek(), {"SELECT", "INSERT", "REPLACE", "UPDATE", "DELETE", "TABLE", "WITH",
                           "FORMAT", "ANALYZE", "EXTENDED", "PARTITIONS", "FOR"})) {
    return p.unsupported_from(start);
  }
  ShowColumns s;
  s.table = *p.table_name();
  if (!p.at_statement_end()) {
    s.filter.like = p.name_or_string();
    if (!s.filter.like) return p.fail();
  }
  return p.finish(std::move(s));
}

Statement parse_show_table_status(Parser& p) {
  ShowTableStatus s;
  if (from_schema(p, s.schema)) show_filter(p, s.filter);
  return p.finish(std::move(s));
}

}  // namespace ticketd::sql::detail
