// Decoders for the simple command-phase packets. Every decoder takes the whole payload including
// the command byte and checks it.
#pragma once

#include <cstdint>
#include <string>

#include "server/base/result.h"
#include "server/mysql/protocol/bytes.h"

namespace ticketd::mysql {

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query.html
/// Assumes CLIENT_QUERY_ATTRIBUTES was not negotiated (then the query is simply string<EOF>).
struct ComQuery {
  std::string_view query;  // a view into the decoded payload
};
[[nodiscard]] Result<ComQuery> decode_com_query(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_init_db.html
struct ComInitDb {
  std::string schema;
};
[[nodiscard]] Result<ComInitDb> decode_com_init_db(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_field_list.html
/// Still sent by the mysql CLI to fill its tab completion (unless started with -A).
struct ComFieldList {
  std::string table;
  std::string wildcard;
};
[[nodiscard]] Result<ComFieldList> decode_com_field_list(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_set_option.html
struct ComSetOption {
  std::uint16_t option = 0;  // kMysqlOptionMultiStatementsOn / Off
};
[[nodiscard]] Result<ComSetOption> decode_com_set_option(ByteView payload);

}  // namespace ticketd::mysql
