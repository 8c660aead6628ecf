// Connection phase: the server greeting, the client's answer, SSL requests and auth switches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "server/base/result.h"
#include "server/mysql/protocol/auth.h"
#include "server/mysql/protocol/bytes.h"
#include "server/mysql/protocol/constants.h"
#include "server/mysql/protocol/packet_writer.h"

namespace ticketd::mysql {

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_handshake_v10.html
struct HandshakeV10 {
  std::string server_version;
  std::uint32_t connection_id = 0;
  /// Sent as 8 bytes, a filler NUL, and later 12 bytes plus a NUL (what clients expect for
  /// mysql_native_password, which takes exactly 20 bytes).
  Scramble auth_plugin_data{};
  Capabilities capabilities = 0;
  std::uint8_t character_set = kCharsetUtf8mb4GeneralCi;
  std::uint16_t status_flags = kServerStatusAutocommit;
  /// Only written when `capabilities` has kClientPluginAuth.
  std::string auth_plugin_name = std::string(kNativePasswordPlugin);

  friend bool operator==(const HandshakeV10&, const HandshakeV10&) = default;
};

void encode(const HandshakeV10& greeting, PacketWriter& out);
/// For tests and tools; the server never reads a greeting.
[[nodiscard]] Result<HandshakeV10> decode_handshake_v10(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_ssl_request.html
/// The first 32 bytes of a HandshakeResponse41 with CLIENT_SSL set; TLS starts right after it.
struct SslRequest {
  Capabilities capabilities = 0;
  std::uint32_t max_packet_size = 0;
  std::uint8_t character_set = 0;

  friend bool operator==(const SslRequest&, const SslRequest&) = default;
};

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_handshake_response.html
struct HandshakeResponse41 {
  Capabilities capabilities = 0;
  std::uint32_t max_packet_size = 0;
  std::uint8_t character_set = 0;
  std::string username;
  /// Raw bytes produced by the client's auth plugin (20 bytes or empty for native password).
  std::string auth_response;
  /// Present when CLIENT_CONNECT_WITH_DB is set and the packet carries the field.
  std::optional<std::string> database;
  /// Absent when the client did not set CLIENT_PLUGIN_AUTH or the packet ends before it.
  std::optional<std::string> auth_plugin_name;
  std::vector<std::pair<std::string, std::string>> connect_attributes;

  friend bool operator==(const HandshakeResponse41&, const HandshakeResponse41&) = default;
};

using HandshakeResponse = std::variant<SslRequest, HandshakeResponse41>;

/// Decodes what a client sends after the greeting: an SslRequest (exactly 32 bytes with
/// CLIENT_SSL) or a HandshakeResponse41. The auth response may be lenenc
/// (CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA), 1-byte length prefixed (CLIENT_SECURE_CONNECTION, as
/// PHP mysqlnd and Go's driver send it) or NUL-terminated (neither). Trailing optional fields may
/// be missing even when their flag is set: like mysqld, the decoder accepts a packet that ends
/// cleanly between fields. Pre-4.1 clients (no CLIENT_PROTOCOL_41) get kUnsupported.
[[nodiscard]] Result<HandshakeResponse> decode_handshake_response(ByteView payload);
/// The client side, for tests and tools. Writes the auth response in the form the capabilities
/// select (lenenc, 1-byte length or NUL-terminated) and the optional fields whose flags are set
/// and whose values are present.
void encode(const HandshakeResponse41& response, PacketWriter& out);
void encode(const SslRequest& request, PacketWriter& out);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_auth_switch_request.html
struct AuthSwitchRequest {
  std::string plugin_name;
  /// Written verbatim; see auth_switch() for what the plugins expect.
  std::string plugin_data;

  friend bool operator==(const AuthSwitchRequest&, const AuthSwitchRequest&) = default;
};

/// A switch to `plugin` (mysql_native_password or caching_sha2_password) with `scramble`. mysqld
/// appends a NUL to the 20 bytes, and some clients (older libmysqlclient) rely on it, so this
/// does too.
AuthSwitchRequest auth_switch(std::string_view plugin, const Scramble& scramble);

void encode(const AuthSwitchRequest& request, PacketWriter& out);
[[nodiscard]] Result<AuthSwitchRequest> decode_auth_switch_request(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_auth_switch_response.html
/// The whole payload is the plugin's data (string<EOF>), so this cannot fail; it exists so that
/// the connection code reads as the protocol does.
[[nodiscard]] std::string decode_auth_switch_response(ByteView payload);

/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_auth_more_data.html
/// 0x01 and the plugin's data: caching_sha2_password sends one status byte in it (fast
/// authentication succeeded, or perform full authentication).
struct AuthMoreData {
  std::string data;

  friend bool operator==(const AuthMoreData&, const AuthMoreData&) = default;
};

void encode(const AuthMoreData& more, PacketWriter& out);
[[nodiscard]] Result<AuthMoreData> decode_auth_more_data(ByteView payload);

}  // namespace ticketd::mysql
