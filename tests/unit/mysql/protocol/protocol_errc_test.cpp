#include "server/mysql/protocol/protocol_errc.h"

#include <gtest/gtest.h>

#include "server/base/result.h"

namespace ticketd::mysql {
namespace {

TEST(ProtocolErrc, ConvertsImplicitlyToErrorCodeInTheProtocolCategory) {
  const ErrorCode ec = ProtocolErrc::kTruncated;
  EXPECT_EQ(&ec.category(), &protocol_category());
  EXPECT_STREQ(ec.category().name(), "mysql.protocol");
  EXPECT_EQ(ec, ProtocolErrc::kTruncated);
  EXPECT_NE(ec, ProtocolErrc::kMalformed);
}

TEST(ProtocolErrc, EveryValueHasAMessage) {
  for (auto e : {ProtocolErrc::kTruncated, ProtocolErrc::kMalformed, ProtocolErrc::kPacketTooLarge,
                 ProtocolErrc::kUnsupported, ProtocolErrc::kBadSequence,
                 ProtocolErrc::kUnexpectedPacket, ProtocolErrc::kMissingParamTypes}) {
    EXPECT_NE(make_error_code(e).message(), "unknown mysql protocol error");
  }
}

TEST(ProtocolErrc, WorksAsTheErrorOfAResult) {
  Result<int> r = make_error_code(ProtocolErrc::kPacketTooLarge);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), ProtocolErrc::kPacketTooLarge);
}

}  // namespace
}  // namespace ticketd::mysql
