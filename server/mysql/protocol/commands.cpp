#include "server/mysql/protocol/commands.h"

#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/packet_reader.h"

namespace ticketd::mysql {

Result<ComQuery> decode_com_query(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComQuery);
  ComQuery q{r.rest()};
  if (!r.ok()) return r.error();
  return q;
}

Result<ComInitDb> decode_com_init_db(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComInitDb);
  ComInitDb c{std::string(r.rest())};
  if (!r.ok()) return r.error();
  return c;
}

Result<ComFieldList> decode_com_field_list(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComFieldList);
  ComFieldList c;
  c.table = r.null_string();
  c.wildcard = r.rest();
  if (!r.ok()) return r.error();
  return c;
}

Result<ComSetOption> decode_com_set_option(ByteView payload) {
  PacketReader r(payload);
  r.expect_u8(kComSetOption);
  ComSetOption c{r.u16()};
  if (!r.ok()) return r.error();
  return c;
}

}  // namespace ticketd::mysql
