#include "server/mysql/protocol/handshake.h"

#include <gtest/gtest.h>

#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/protocol_errc.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::expect_every_strict_prefix_fails;
using testing::from_hex;
using testing::hex;
using testing::to_hex;

Scramble scramble_from_hex(std::string_view h) {
  const std::string bytes = from_hex(h);
  Scramble s{};
  std::copy(bytes.begin(), bytes.end(), s.begin());
  return s;
}

// The scramble of the docs' HandshakeV10 example, reused across tests.
const Scramble kDocsScramble =
    scramble_from_hex("22 3d 4e 50 29 75 39 56 29 64 40 52 5c 55 78 7a 7c 21 29 4b");

// --- HandshakeV10 ------------------------------------------------------------------------------

struct GreetingCase {
  std::string_view name;
  HandshakeV10 greeting;
  std::string_view hex;  // full packet, sequence id 0
};

HandshakeV10 docs_greeting() {
  HandshakeV10 g;
  g.server_version = "5.5.2-m2";
  g.connection_id = 0x52;
  g.auth_plugin_data = kDocsScramble;
  g.capabilities = 0xFFFF;  // no upper flags, so no CLIENT_PLUGIN_AUTH and no plugin name
  g.character_set = kCharsetLatin1SwedishCi;
  g.status_flags = kServerStatusAutocommit;
  g.auth_plugin_name = "";
  return g;
}

HandshakeV10 ticketd_greeting() {
  HandshakeV10 g;
  g.server_version = "8.0.0-ticketd";
  g.connection_id = 7;
  g.auth_plugin_data = kDocsScramble;
  g.capabilities = kClientLongPassword | kClientProtocol41 | kClientTransactions |
                   kClientSecureConnection | kClientPluginAuth | kClientDeprecateEof;
  return g;
}

const std::vector<GreetingCase> kGreetingCases = {
    // Example of
    // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_handshake_v10.html
    // (a 5.5.2 server without CLIENT_PLUGIN_AUTH), reproduced from the docs page, each field
    // re-checked against the layout.
    {"docs_example", docs_greeting(),
     "36 00 00 00 0a 35 2e 35 2e 32 2d 6d 32 00 52 00 00 00 22 3d 4e 50 29 75 39 56 00 ff ff 08 02 "
     "00 00 00 00 00 00 00 00 00 00 00 00 00 00 29 64 40 52 5c 55 78 7a 7c 21 29 4b 00"},
    // Hand-built from the layout table: caps 0x0108a201 split 01 a2 / 08 01, auth data length 21
    // (20 + NUL) because CLIENT_PLUGIN_AUTH is set, then the plugin name.
    {"ticketd_plugin_auth", ticketd_greeting(),
     "51 00 00 00 0a"
     " 38 2e 30 2e 30 2d 74 69 63 6b 65 74 64 00"  // "8.0.0-ticketd"
     " 07 00 00 00"                                // connection id
     " 22 3d 4e 50 29 75 39 56 00"                 // scramble part 1 + filler
     " 01 a2 2d 02 00 08 01"                       // caps low, charset 45, status, caps high
     " 15 00 00 00 00 00 00 00 00 00 00"           // auth data length 21, reserved
     " 29 64 40 52 5c 55 78 7a 7c 21 29 4b 00"     // scramble part 2 + NUL
     " 6d 79 73 71 6c 5f 6e 61 74 69 76 65 5f 70 61 73 73 77 6f 72 64 00"},
};

TEST(HandshakeV10, EncodesByteForByte) {
  for (const auto& c : kGreetingCases) {
    std::uint8_t seq = 0;
    EXPECT_EQ(to_hex(frame(to_payload(c.greeting), seq)), hex(c.hex)) << c.name;
  }
}

TEST(HandshakeV10, DecodesWhatItEncodes) {
  for (const auto& c : kGreetingCases) {
    const std::string payload = from_hex(c.hex).substr(4);
    auto r = decode_handshake_v10(as_bytes(payload));
    ASSERT_TRUE(r.has_value()) << c.name;
    EXPECT_EQ(*r, c.greeting) << c.name;
    expect_every_strict_prefix_fails(payload, [](ByteView b) { return decode_handshake_v10(b); });
  }
}

// --- HandshakeResponse41 / SSLRequest ----------------------------------------------------------

struct ResponseCase {
  std::string_view name;
  HandshakeResponse41 response;
  std::string hex;  // payload (owned: built by concatenation)
  /// Strict-prefix lengths that are complete packets on their own (optional trailing fields).
  std::vector<std::size_t> valid_prefixes;
};

HandshakeResponse41 docs_response() {
  HandshakeResponse41 h;
  h.capabilities = 0x000fa68d;
  h.max_packet_size = 0x01000000;
  h.character_set = kCharsetLatin1SwedishCi;
  h.username = "pam";
  h.auth_response = from_hex("ab 09 ee f6 bc b1 32 3e 61 14 38 65 c0 99 1d 95 7d 75 d4 47");
  h.database = "test";
  h.auth_plugin_name = "mysql_native_password";
  return h;
}

// Token of password "secret" for kDocsScramble (see auth_test.cpp).
constexpr std::string_view kSecretToken =
    "75 2e 52 52 87 c3 81 86 8e 48 f7 c4 a5 07 0a 2e 42 91 c8 54";

HandshakeResponse41 libmysql_style_response() {
  HandshakeResponse41 h;
  h.capabilities = kClientLongPassword | kClientProtocol41 | kClientTransactions |
                   kClientSecureConnection | kClientMultiResults | kClientPluginAuth |
                   kClientConnectAttrs | kClientPluginAuthLenencClientData | kClientDeprecateEof;
  h.max_packet_size = 0x01000000;
  h.character_set = 0xFF;
  h.username = "root";
  h.auth_response = from_hex(kSecretToken);
  h.auth_plugin_name = "mysql_native_password";
  h.connect_attributes = {{"_client_name", "libmysql"}, {"_pid", "42"}};
  return h;
}

HandshakeResponse41 mysqlnd_style_response() {
  HandshakeResponse41 h;
  h.capabilities = kClientLongPassword | kClientConnectWithDb | kClientProtocol41 |
                   kClientTransactions | kClientSecureConnection;
  h.max_packet_size = 0x01000000;
  h.character_set = kCharsetUtf8mb4GeneralCi;
  h.username = "app";
  h.database = "tickets";
  return h;
}

HandshakeResponse41 nul_terminated_auth_response() {
  HandshakeResponse41 h;
  h.capabilities = kClientLongPassword | kClientProtocol41;
  h.username = "u";
  h.auth_response = "abc";
  return h;
}

HandshakeResponse41 ends_after_auth_response() {
  HandshakeResponse41 h;
  h.capabilities = kClientConnectWithDb | kClientProtocol41 | kClientSecureConnection |
                   kClientPluginAuth | kClientPluginAuthLenencClientData;
  h.username = "u";
  return h;
}

const std::string kZeros23 =
    " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00";

const std::vector<ResponseCase> kResponseCases = {
    // Example of
    // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_handshake_response.html
    // (user "pam", db "test", mysql_native_password), reproduced from the docs page, each field
    // re-checked against the layout; header "54 00 00 01" stripped. SECURE_CONNECTION without
    // LENENC: 1-byte auth length.
    {"docs_example",
     docs_response(),
     "8d a6 0f 00 00 00 00 01 08" + kZeros23 +
         " 70 61 6d 00 14 ab 09 ee f6 bc b1 32 3e 61 14 38 65 c0 99 1d 95 7d 75 d4 47 74 65 73 74 "
         "00 6d 79 73 71 6c 5f 6e 61 74 69 76 65 5f 70 61 73 73 77 6f 72 64 00",
     {57, 62}},
    // Hand-built, shaped like libmysqlclient 8.0: lenenc auth data, no database, plugin name,
    // connect attributes (block of 0x1e bytes).
    {"lenenc_auth_and_attributes",
     libmysql_style_response(),
     "01 a2 3a 01 00 00 00 01 ff" + kZeros23 +
         " 72 6f 6f 74 00"                                                  // "root"
         " 14 75 2e 52 52 87 c3 81 86 8e 48 f7 c4 a5 07 0a 2e 42 91 c8 54"  // lenenc token
         " 6d 79 73 71 6c 5f 6e 61 74 69 76 65 5f 70 61 73 73 77 6f 72 64 00"
         " 1e 0c 5f 63 6c 69 65 6e 74 5f 6e 61 6d 65 08 6c 69 62 6d 79 73 71 6c"
         " 04 5f 70 69 64 02 34 32",
     {58, 80}},
    // Hand-built, shaped like PHP mysqlnd / Go without plugin auth: 1-byte length 0 for an empty
    // password, then the database.
    {"one_byte_auth_length_empty_password",
     mysqlnd_style_response(),
     "09 a2 00 00 00 00 00 01 2d" + kZeros23 + " 61 70 70 00 00 74 69 63 6b 65 74 73 00",
     {37}},
    // Hand-built: neither SECURE_CONNECTION nor LENENC, so the auth data is NUL-terminated.
    {"nul_terminated_auth",
     nul_terminated_auth_response(),
     "01 02 00 00 00 00 00 00 00" + kZeros23 + " 75 00 61 62 63 00",
     {}},
    // Hand-built: CONNECT_WITH_DB and PLUGIN_AUTH set, but the packet ends after the auth data.
    {"flags_set_but_packet_ends",
     ends_after_auth_response(),
     "08 82 28 00 00 00 00 00 00" + kZeros23 + " 75 00 00",
     {}},
};

TEST(HandshakeResponse41, DecodesEveryAuthDataForm) {
  for (const auto& c : kResponseCases) {
    const std::string payload = from_hex(c.hex);
    auto r = decode_handshake_response(as_bytes(payload));
    ASSERT_TRUE(r.has_value()) << c.name << ": " << r.error().message();
    ASSERT_TRUE(std::holds_alternative<HandshakeResponse41>(*r)) << c.name;
    EXPECT_EQ(std::get<HandshakeResponse41>(*r), c.response) << c.name;
  }
}

TEST(HandshakeResponse41, EncodesByteForByte) {
  for (const auto& c : kResponseCases) {
    EXPECT_EQ(to_hex(to_payload(c.response)), hex(c.hex)) << c.name;
  }
}

TEST(HandshakeResponse41, MatchesTheFramedDocsExample) {
  std::uint8_t seq = 1;
  const std::string framed = frame(to_payload(docs_response()), seq);
  EXPECT_EQ(to_hex(framed.substr(0, 4)), hex("54 00 00 01"));
}

TEST(HandshakeResponse41, StrictPrefixesFailExceptAtOptionalFieldBoundaries) {
  for (const auto& c : kResponseCases) {
    const std::string payload = from_hex(c.hex);
    for (std::size_t n = 0; n < payload.size(); ++n) {
      const std::vector<std::uint8_t> prefix(payload.data(), payload.data() + n);
      const auto r = decode_handshake_response(ByteView(prefix.data(), prefix.size()));
      const bool boundary =
          std::find(c.valid_prefixes.begin(), c.valid_prefixes.end(), n) != c.valid_prefixes.end();
      EXPECT_EQ(r.has_value(), boundary) << c.name << " prefix " << n;
    }
  }
}

TEST(HandshakeResponse41, DetectsAnSslRequest) {
  // Hand-built: the 32-byte prefix of a response with CLIENT_SSL.
  const std::string payload = from_hex("00 8a 00 00 00 00 00 01 2d" + kZeros23);
  ASSERT_EQ(payload.size(), 32u);
  auto r = decode_handshake_response(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(std::holds_alternative<SslRequest>(*r));
  const SslRequest expected{kClientProtocol41 | kClientSsl | kClientSecureConnection, 0x01000000,
                            kCharsetUtf8mb4GeneralCi};
  EXPECT_EQ(std::get<SslRequest>(*r), expected);
  EXPECT_EQ(to_hex(to_payload(expected)), to_hex(payload));
}

TEST(HandshakeResponse41, A32BytePacketWithoutSslIsTruncated) {
  const std::string payload = from_hex("00 82 00 00 00 00 00 01 2d" + kZeros23);
  EXPECT_EQ(decode_handshake_response(as_bytes(payload)).error(), ProtocolErrc::kTruncated);
}

TEST(HandshakeResponse41, RejectsPre41Clients) {
  // HandshakeResponse320 example from the same docs page, header stripped.
  const std::string payload = from_hex("85 24 00 00 00 6f 6c 64 00 47 44 53 43 51 59 52 5f");
  EXPECT_EQ(decode_handshake_response(as_bytes(payload)).error(), ProtocolErrc::kUnsupported);
}

TEST(HandshakeResponse41, RejectsAttributePairsThatOverrunTheirBlock) {
  HandshakeResponse41 h = libmysql_style_response();
  std::string payload = to_payload(h);
  // Shrink the block length (0x1e) by one: the last value no longer fits inside the block.
  const std::size_t block_length_at = payload.size() - 0x1e - 1;
  ASSERT_EQ(static_cast<unsigned char>(payload[block_length_at]), 0x1e);
  payload[block_length_at] = 0x1d;
  EXPECT_EQ(decode_handshake_response(as_bytes(payload)).error(), ProtocolErrc::kMalformed);
}

TEST(HandshakeResponse41, GarbageNeverCrashes) {
  std::string payload = to_payload(libmysql_style_response());
  for (std::size_t i = 0; i < payload.size(); ++i) {
    for (const unsigned char v : {0x00, 0x01, 0x7f, 0xfb, 0xfc, 0xfd, 0xfe, 0xff}) {
      std::string mutated = payload;
      mutated[i] = static_cast<char>(v);
      const std::vector<std::uint8_t> exact(mutated.begin(), mutated.end());
      (void)decode_handshake_response(ByteView(exact.data(), exact.size()));
    }
  }
}

// --- AuthSwitchRequest / AuthSwitchResponse ----------------------------------------------------

TEST(AuthSwitchRequest, NativePasswordSwitchEncodesByteForByte) {
  // Hand-built from the layout table: 0xFE, plugin name NUL, 20-byte scramble + NUL as mysqld
  // sends it.
  const std::string expected =
      "fe 6d 79 73 71 6c 5f 6e 61 74 69 76 65 5f 70 61 73 73 77 6f 72 64 00"
      " 22 3d 4e 50 29 75 39 56 29 64 40 52 5c 55 78 7a 7c 21 29 4b 00";
  const AuthSwitchRequest request = auth_switch(kNativePasswordPlugin, kDocsScramble);
  const std::string payload = to_payload(request);
  EXPECT_EQ(to_hex(payload), hex(expected));
  auto r = decode_auth_switch_request(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, request);
  // Every prefix that cuts the plugin name fails; the data is string<EOF>.
  testing::expect_prefixes_fail(payload, 23,
                                [](ByteView b) { return decode_auth_switch_request(b); });
}

TEST(AuthSwitchResponse, IsTheRawPayload) {
  // Example of
  // https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_auth_switch_response.html
  const std::string packet =
      from_hex("14 00 00 03 f4 17 96 1f 79 f3 ac 10 0b da a6 b3 b5 c2 0e ab 59 85 ff b8");
  FrameDecoder d(1024);
  d.feed(packet);
  auto f = d.next();
  ASSERT_TRUE(f.has_value() && f->has_value());
  EXPECT_EQ((*f)->last_sequence_id, 3);
  const std::string data = decode_auth_switch_response(as_bytes((*f)->payload));
  EXPECT_EQ(to_hex(data), hex("f4 17 96 1f 79 f3 ac 10 0b da a6 b3 b5 c2 0e ab 59 85 ff b8"));
}

TEST(AuthSwitchRequest, CachingSha2SwitchEncodesByteForByte) {
  // As mysqld 8 sends it: 0xFE, "caching_sha2_password" NUL, the 20-byte scramble and a NUL.
  const std::string expected =
      "fe 63 61 63 68 69 6e 67 5f 73 68 61 32 5f 70 61 73 73 77 6f 72 64 00"
      " 22 3d 4e 50 29 75 39 56 29 64 40 52 5c 55 78 7a 7c 21 29 4b 00";
  const AuthSwitchRequest request = auth_switch(kCachingSha2PasswordPlugin, kDocsScramble);
  const std::string payload = to_payload(request);
  EXPECT_EQ(to_hex(payload), hex(expected));
  auto r = decode_auth_switch_request(as_bytes(payload));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, request);
}

// --- AuthMoreData ----------------------------------------------------------------------------

TEST(AuthMoreData, EncodesTheCachingSha2StatusBytes) {
  // fast_auth_success and perform_full_authentication, as in the caching_sha2_password exchange
  // diagrams of the MySQL docs (the packets' payloads: 0x01 and one status byte).
  const struct {
    std::uint8_t status;
    std::string_view hex;
  } cases[] = {{kCachingSha2FastAuthSuccess, "01 03"},
               {kCachingSha2PerformFullAuthentication, "01 04"}};
  for (const auto& c : cases) {
    const AuthMoreData more{std::string(1, static_cast<char>(c.status))};
    const std::string payload = to_payload(more);
    EXPECT_EQ(to_hex(payload), hex(c.hex));
    auto r = decode_auth_more_data(as_bytes(payload));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(*r, more);
  }
}

TEST(AuthMoreData, RejectsAnEmptyPayloadAndOtherHeaders) {
  EXPECT_FALSE(decode_auth_more_data(as_bytes(std::string_view())).has_value());
  const std::string ok_packet = from_hex("00 00 00 02 00 00 00");
  EXPECT_EQ(decode_auth_more_data(as_bytes(ok_packet)).error(),
            make_error_code(ProtocolErrc::kUnexpectedPacket));
}

}  // namespace
}  // namespace ticketd::mysql
