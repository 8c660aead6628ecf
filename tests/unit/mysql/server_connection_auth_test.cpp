// The connection phase in bytes: caching_sha2_password (fast and full authentication), switches
// to each user's own plugin, the SslRequest that starts TLS, and require_secure_transport.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>

#include "server/mysql/protocol/generic_packets.h"
#include "server/mysql/protocol/handshake.h"
#include "server/mysql/protocol/packet_writer.h"
#include "server/mysql/server_connection.h"
#include "tests/support/scripted_command_handler.h"
#include "tests/unit/mysql/conversation_support.h"
#include "tests/unit/mysql/protocol/test_util.h"

namespace ticketd::mysql {
namespace {

using testing::kModernClient;
using testing::Packet;
using testing::ScriptedCommandHandler;
using testing::to_hex;
using testing::unframe;

constexpr std::string_view kOk = "00 00 00 02 00 00 00";

class AuthConversation : public ::testing::Test {
 protected:
  AuthConversation() {
    login_.users["native"] = UserAccount::with_password(AuthPlugin::kNativePassword, "n-pass");
    login_.users["sha"] = UserAccount::with_password(AuthPlugin::kCachingSha2Password, "s-pass");
    login_.users["nopass"] = UserAccount::with_password(AuthPlugin::kCachingSha2Password, "");
  }

  ServerConnection& conn() {
    if (!conn_) {
      conn_ = std::make_unique<ServerConnection>(
          handler_, login_, 3, "10.0.0.9",
          ConnectionHooks{[this](std::string_view user) { failures_.emplace_back(user); }, {}});
    }
    return *conn_;
  }

  HandshakeV10 greet() {
    auto packets = unframe(conn().greeting());
    EXPECT_EQ(packets.size(), 1u);
    auto hello = decode_handshake_v10(as_bytes(packets.at(0).payload));
    EXPECT_TRUE(hello);
    return *hello;
  }

  ServerConnection::Output send(std::string_view payload, std::uint8_t seq) {
    std::string framed;
    append_frame(framed, payload, seq);
    conn().feed(framed);
    std::promise<ServerConnection::Output> p;
    EXPECT_TRUE(
        conn().process_next([&p](ServerConnection::Output o) { p.set_value(std::move(o)); }));
    return p.get_future().get();
  }

  static std::string response(std::string user, std::string auth, std::string plugin,
                              Capabilities caps = kModernClient) {
    HandshakeResponse41 r;
    r.capabilities = caps;
    r.max_packet_size = 1 << 24;
    r.character_set = kCharsetUtf8mb4GeneralCi;
    r.username = std::move(user);
    r.auth_response = std::move(auth);
    r.database = "tickets";
    r.auth_plugin_name = std::move(plugin);
    return to_payload(r);
  }

  static std::string ssl_request() {
    return to_payload(SslRequest{kModernClient | kClientSsl, 1 << 24, kCharsetUtf8mb4GeneralCi});
  }

  static ErrPacket err_of(const Packet& p) {
    auto e = decode_err_packet(as_bytes(p.payload));
    EXPECT_TRUE(e) << to_hex(p.payload);
    return e ? *e : ErrPacket{};
  }

  ScriptedCommandHandler handler_;
  LoginPolicy login_;
  std::vector<std::string> failures_;
  std::unique_ptr<ServerConnection> conn_;
};

TEST_F(AuthConversation, GreetingNamesTheDefaultPluginAndOffersSslOnlyWithTls) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  auto hello = greet();
  EXPECT_EQ(hello.auth_plugin_name, kCachingSha2PasswordPlugin);
  EXPECT_EQ(hello.capabilities & kClientSsl, 0u);
  conn_.reset();
  login_.tls_available = true;
  EXPECT_NE(greet().capabilities & kClientSsl, 0u);
}

TEST_F(AuthConversation, FastAuthenticationSendsFastAuthSuccessThenOk) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  auto hello = greet();
  auto out = send(response("sha", caching_sha2_token("s-pass", hello.auth_plugin_data),
                           std::string(kCachingSha2PasswordPlugin)),
                  1);
  auto packets = unframe(out.bytes);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0].seq, 2);
  EXPECT_EQ(to_hex(packets[0].payload), "01 03");
  EXPECT_EQ(packets[1].seq, 3);
  EXPECT_EQ(to_hex(packets[1].payload), kOk);
  EXPECT_TRUE(conn().authenticated());
  EXPECT_EQ(conn().session().user, "sha");
  EXPECT_TRUE(failures_.empty());
}

TEST_F(AuthConversation, AnEmptyPasswordIsAnOkWithoutFastAuthSuccess) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  greet();
  auto packets = unframe(send(response("nopass", "", "caching_sha2_password"), 1).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(to_hex(packets[0].payload), kOk);
  EXPECT_TRUE(conn().authenticated());
}

TEST_F(AuthConversation, AnEmptyTokenForAUserWithAPasswordIsDeniedAtOnce) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  greet();
  auto out = send(response("sha", "", "caching_sha2_password"), 1);
  EXPECT_TRUE(out.close);
  const auto e = err_of(unframe(out.bytes).at(0));
  EXPECT_EQ(e.error_code, 1045);
  EXPECT_EQ(e.message, "Access denied for user 'sha'@'10.0.0.9' (using password: NO)");
}

TEST_F(AuthConversation, AWrongTokenAsksForFullAuthenticationWhichNeedsTls) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  auto hello = greet();
  auto out = send(
      response("sha", caching_sha2_token("wrong", hello.auth_plugin_data), "caching_sha2_password"),
      1);
  auto packets = unframe(out.bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 2);
  EXPECT_EQ(to_hex(packets[0].payload), "01 04");  // perform_full_authentication
  EXPECT_FALSE(out.close);
  // Outside TLS the client asks for the RSA public key (0x02): refused, clearly.
  out = send(std::string(1, '\x02'), 3);
  EXPECT_TRUE(out.close);
  packets = unframe(out.bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 4);
  const auto e = err_of(packets[0]);
  EXPECT_EQ(e.error_code, 1045);
  EXPECT_NE(e.message.find("needs a TLS connection"), std::string::npos) << e.message;
  EXPECT_EQ(failures_, std::vector<std::string>{"sha"});
}

TEST_F(AuthConversation, APasswordSentInClearOutsideTlsIsRefusedEvenWhenRight) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  greet();
  (void)send(response("sha", std::string(32, 'x'), "caching_sha2_password"), 1);
  auto out = send(std::string("s-pass") + '\0', 3);
  EXPECT_TRUE(out.close);
  EXPECT_EQ(err_of(unframe(out.bytes).at(0)).error_code, 1045);
  EXPECT_FALSE(conn().authenticated());
}

// Logs in over a TLS the test pretends to have run: greeting, SslRequest (seq 1), then the
// response inside TLS (seq 2).
class TlsAuthConversation : public AuthConversation {
 protected:
  TlsAuthConversation() {
    login_.tls_available = true;
    login_.default_plugin = AuthPlugin::kCachingSha2Password;
  }

  HandshakeV10 start_tls() {
    auto hello = greet();
    auto out = send(ssl_request(), 1);
    EXPECT_TRUE(out.start_tls);
    EXPECT_TRUE(out.bytes.empty());
    EXPECT_FALSE(out.close);
    conn().tls_started("TLSv1.3", "TLS_AES_256_GCM_SHA384");
    EXPECT_TRUE(conn().secure());
    return hello;
  }
};

TEST_F(TlsAuthConversation, FullAuthenticationInsideTlsAcceptsTheRightPassword) {
  start_tls();
  auto packets =
      unframe(send(response("sha", std::string(32, 'x'), "caching_sha2_password"), 2).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 3);
  EXPECT_EQ(to_hex(packets[0].payload), "01 04");
  packets = unframe(send(std::string("s-pass") + '\0', 4).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 5);
  EXPECT_EQ(to_hex(packets[0].payload), kOk);
  EXPECT_TRUE(conn().authenticated());
  EXPECT_EQ(conn().session().tls_version, "TLSv1.3");
  EXPECT_EQ(conn().session().tls_cipher, "TLS_AES_256_GCM_SHA384");
}

TEST_F(TlsAuthConversation, FullAuthenticationInsideTlsRefusesAWrongPassword) {
  start_tls();
  (void)send(response("sha", std::string(32, 'x'), "caching_sha2_password"), 2);
  auto out = send(std::string("s-pas") + '\0', 4);
  EXPECT_TRUE(out.close);
  const auto e = err_of(unframe(out.bytes).at(0));
  EXPECT_EQ(e.error_code, 1045);
  EXPECT_EQ(e.message, "Access denied for user 'sha'@'10.0.0.9' (using password: YES)");
  EXPECT_EQ(failures_, std::vector<std::string>{"sha"});
}

TEST_F(TlsAuthConversation, FastAuthenticationWorksInsideTlsToo) {
  auto hello = start_tls();
  auto packets = unframe(send(response("sha", caching_sha2_token("s-pass", hello.auth_plugin_data),
                                       "caching_sha2_password"),
                              2)
                             .bytes);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(to_hex(packets[0].payload), "01 03");
  EXPECT_EQ(packets[1].seq, 4);
  EXPECT_TRUE(conn().authenticated());
}

TEST_F(TlsAuthConversation, ResetConnectionKeepsTheTlsStateAndTheCompletion) {
  auto hello = start_tls();
  auto packets = unframe(send(response("sha", caching_sha2_token("s-pass", hello.auth_plugin_data),
                                       "caching_sha2_password"),
                              2)
                             .bytes);
  ASSERT_TRUE(conn().authenticated());
  const auto* completion = conn().session().completion.get();
  packets = unframe(send(std::string(1, static_cast<char>(kComResetConnection)), 0).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].payload[0], '\0');
  EXPECT_TRUE(conn().secure());
  EXPECT_EQ(conn().session().tls_cipher, "TLS_AES_256_GCM_SHA384");
  EXPECT_EQ(conn().session().completion.get(), completion);
}

TEST_F(TlsAuthConversation, ASecondSslRequestIsABadHandshake) {
  start_tls();
  auto out = send(ssl_request(), 2);
  EXPECT_TRUE(out.close);
  EXPECT_EQ(err_of(unframe(out.bytes).at(0)).error_code, 1043);
}

TEST_F(AuthConversation, AnSslRequestWithoutTlsConfiguredIsRefused) {
  greet();
  auto out = send(ssl_request(), 1);
  EXPECT_FALSE(out.start_tls);
  EXPECT_TRUE(out.close);
  const auto e = err_of(unframe(out.bytes).at(0));
  EXPECT_EQ(e.error_code, 1043);
  EXPECT_NE(e.message.find("TLS is not configured"), std::string::npos);
}

TEST_F(AuthConversation, RequireSecureTransportRefusesAClearTextLoginWith3159) {
  login_.tls_available = true;
  login_.require_secure_transport = true;
  auto hello = greet();
  auto out = send(response("native", native_password_token("n-pass", hello.auth_plugin_data),
                           std::string(kNativePasswordPlugin)),
                  1);
  EXPECT_TRUE(out.close);
  const auto e = err_of(unframe(out.bytes).at(0));
  EXPECT_EQ(e.error_code, 3159);
  EXPECT_EQ(e.sql_state, "HY000");
  EXPECT_EQ(e.message,
            "Connections using insecure transport are prohibited while "
            "--require_secure_transport=ON.");
}

TEST_F(TlsAuthConversation, RequireSecureTransportAcceptsALoginInsideTls) {
  login_.require_secure_transport = true;
  auto hello = start_tls();
  auto packets =
      unframe(send(response("native", native_password_token("n-pass", hello.auth_plugin_data),
                            std::string(kNativePasswordPlugin)),
                   2)
                  .bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(to_hex(packets[0].payload), kOk);
}

TEST_F(AuthConversation, ANativeUserIsSwitchedFromCachingSha2ToNativePassword) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  auto hello = greet();
  auto packets =
      unframe(send(response("native", caching_sha2_token("n-pass", hello.auth_plugin_data),
                            "caching_sha2_password"),
                   1)
                  .bytes);
  ASSERT_EQ(packets.size(), 1u);
  auto sw = decode_auth_switch_request(as_bytes(packets[0].payload));
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->plugin_name, kNativePasswordPlugin);
  packets = unframe(send(native_password_token("n-pass", hello.auth_plugin_data), 3).bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].seq, 4);
  EXPECT_EQ(to_hex(packets[0].payload), kOk);
}

TEST_F(AuthConversation, ASha2UserIsSwitchedFromNativePasswordToCachingSha2) {
  auto hello = greet();  // the default plugin is mysql_native_password
  auto packets =
      unframe(send(response("sha", native_password_token("s-pass", hello.auth_plugin_data),
                            std::string(kNativePasswordPlugin)),
                   1)
                  .bytes);
  ASSERT_EQ(packets.size(), 1u);
  auto sw = decode_auth_switch_request(as_bytes(packets[0].payload));
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->plugin_name, kCachingSha2PasswordPlugin);
  // The switch carries the same scramble (and mysqld's trailing NUL).
  EXPECT_EQ(sw->plugin_data.size(), 21u);
  packets = unframe(send(caching_sha2_token("s-pass", hello.auth_plugin_data), 3).bytes);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(to_hex(packets[0].payload), "01 03");
  EXPECT_EQ(packets[1].seq, 5);
  EXPECT_EQ(to_hex(packets[1].payload), kOk);
}

TEST_F(AuthConversation, AnUnknownUserGetsTheSameExchangeAsAWrongPassword) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  auto hello = greet();
  auto packets = unframe(send(response("ghost", caching_sha2_token("x", hello.auth_plugin_data),
                                       "caching_sha2_password"),
                              1)
                             .bytes);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(to_hex(packets[0].payload), "01 04");
}

TEST_F(AuthConversation, ASha2UserNeedsAClientWithPluginAuth) {
  greet();
  auto out = send(response("sha", std::string(20, 'x'), "", kModernClient & ~kClientPluginAuth), 1);
  EXPECT_TRUE(out.close);
  const auto e = err_of(unframe(out.bytes).at(0));
  EXPECT_EQ(e.error_code, 1045);
  EXPECT_NE(e.message.find("CLIENT_PLUGIN_AUTH"), std::string::npos) << e.message;
}

TEST_F(AuthConversation, AnUnknownDatabaseAfterFastAuthSuccessIsAnErrAfterIt) {
  login_.default_plugin = AuthPlugin::kCachingSha2Password;
  auto hello = greet();
  HandshakeResponse41 r;
  r.capabilities = kModernClient;
  r.username = "sha";
  r.auth_response = caching_sha2_token("s-pass", hello.auth_plugin_data);
  r.database = "elsewhere";
  r.auth_plugin_name = std::string(kCachingSha2PasswordPlugin);
  auto out = send(to_payload(r), 1);
  EXPECT_TRUE(out.close);
  auto packets = unframe(out.bytes);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(to_hex(packets[0].payload), "01 03");
  EXPECT_EQ(packets[1].seq, 3);
  EXPECT_EQ(err_of(packets[1]).error_code, 1049);
}

}  // namespace
}  // namespace ticketd::mysql
