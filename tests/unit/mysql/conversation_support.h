// Shared by the ServerConnection conversation tests: a modern client's capabilities and the
// framing of the server's replies back into packets.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "server/mysql/protocol/constants.h"

namespace ticketd::mysql::testing {

inline constexpr Capabilities kModernClient =
    kClientLongPassword | kClientLongFlag | kClientConnectWithDb | kClientProtocol41 |
    kClientTransactions | kClientSecureConnection | kClientMultiStatements | kClientMultiResults |
    kClientPsMultiResults | kClientPluginAuth | kClientPluginAuthLenencClientData |
    kClientDeprecateEof;

struct Packet {
  std::uint8_t seq;
  std::string payload;
};

/// Splits framed bytes back into packets (no continuation packets in these tests).
inline std::vector<Packet> unframe(const std::string& bytes) {
  std::vector<Packet> out;
  std::size_t i = 0;
  while (i + 4 <= bytes.size()) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data() + i);
    const std::size_t len = p[0] | (p[1] << 8) | (p[2] << 16);
    out.push_back(Packet{p[3], bytes.substr(i + 4, len)});
    i += 4 + len;
  }
  EXPECT_EQ(i, bytes.size());
  return out;
}

}  // namespace ticketd::mysql::testing
