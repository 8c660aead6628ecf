#include "server/mysql/protocol/handshake.h"

#include <algorithm>

#include "server/mysql/protocol/packet_reader.h"
#include "server/mysql/protocol/protocol_errc.h"

namespace ticketd::mysql {
namespace {

constexpr std::uint8_t kProtocolVersion10 = 10;
constexpr std::size_t kScramblePart1 = 8;
constexpr std::size_t kHandshakeReserved = 10;
// A HandshakeResponse41 up to and including its 23 filler bytes; alone, it is an SSLRequest.
constexpr std::size_t kSslRequestSize = 32;
constexpr std::size_t kResponseFiller = 23;

}  // namespace

void encode(const HandshakeV10& greeting, PacketWriter& out) {
  const auto& data = greeting.auth_plugin_data;
  const bool plugin_auth = (greeting.capabilities & kClientPluginAuth) != 0;
  out.u8(kProtocolVersion10);
  out.null_string(greeting.server_version);
  out.u32(greeting.connection_id);
  out.raw(ByteView(data.data(), kScramblePart1));
  out.u8(0);  // filler, which also NUL-terminates part 1 for old clients
  out.u16(static_cast<std::uint16_t>(greeting.capabilities & 0xFFFF));
  out.u8(greeting.character_set);
  out.u16(greeting.status_flags);
  out.u16(static_cast<std::uint16_t>(greeting.capabilities >> 16));
  // Length of the whole auth-plugin-data including part 2's trailing NUL, as mysqld sends it.
  out.u8(plugin_auth ? static_cast<std::uint8_t>(data.size() + 1) : 0);
  out.zeros(kHandshakeReserved);
  if (greeting.capabilities & kClientSecureConnection) {
    // $len = MAX(13, auth_plugin_data_len - 8): the 12 remaining bytes plus a NUL.
    out.raw(ByteView(data.data() + kScramblePart1, data.size() - kScramblePart1));
    out.u8(0);
  }
  if (plugin_auth) out.null_string(greeting.auth_plugin_name);
}

Result<HandshakeV10> decode_handshake_v10(ByteView payload) {
  PacketReader r(payload);
  HandshakeV10 g;
  const std::uint8_t version = r.u8();
  if (r.ok() && version != kProtocolVersion10) return make_error_code(ProtocolErrc::kUnsupported);
  g.server_version = r.null_string();
  g.connection_id = r.u32();
  const ByteView part1 = r.bytes(kScramblePart1);
  std::copy(part1.begin(), part1.end(), g.auth_plugin_data.begin());
  r.skip(1);
  g.capabilities = r.u16();
  g.character_set = r.u8();
  g.status_flags = r.u16();
  g.capabilities |= static_cast<Capabilities>(r.u16()) << 16;
  const std::uint8_t auth_data_length = r.u8();
  r.skip(kHandshakeReserved);
  if (g.capabilities & kClientSecureConnection) {
    const std::size_t len =
        std::max<std::size_t>(13, auth_data_length > 8 ? auth_data_length - 8 : 0);
    const ByteView part2 = r.bytes(len);
    if (r.ok()) {
      std::copy_n(part2.begin(), g.auth_plugin_data.size() - kScramblePart1,
                  g.auth_plugin_data.begin() + kScramblePart1);
    }
  }
  g.auth_plugin_name.clear();
  if (g.capabilities & kClientPluginAuth) g.auth_plugin_name = r.null_string();
  if (!r.ok()) return r.error();
  return g;
}

Result<HandshakeResponse> decode_handshake_response(ByteView payload) {
  PacketReader r(payload);
  HandshakeResponse41 h;
  h.capabilities = r.u32();
  if (r.ok() && !(h.capabilities & kClientProtocol41)) {
    return make_error_code(ProtocolErrc::kUnsupported);  // HandshakeResponse320
  }
  h.max_packet_size = r.u32();
  h.character_set = r.u8();
  r.skip(kResponseFiller);
  if (!r.ok()) return r.error();
  if (payload.size() == kSslRequestSize && (h.capabilities & kClientSsl)) {
    return SslRequest{h.capabilities, h.max_packet_size, h.character_set};
  }

  h.username = r.null_string();
  if (h.capabilities & kClientPluginAuthLenencClientData) {
    h.auth_response = r.lenenc_string();
  } else if (h.capabilities & kClientSecureConnection) {
    const std::uint8_t n = r.u8();
    h.auth_response = r.fixed_string(n);
  } else {
    h.auth_response = r.null_string();
  }
  // mysqld reads each optional field only if its flag is set *and* bytes remain; some clients
  // set CLIENT_PLUGIN_AUTH or CLIENT_CONNECT_WITH_DB and then end the packet.
  if ((h.capabilities & kClientConnectWithDb) && r.ok() && !r.empty()) {
    h.database = std::string(r.null_string());
  }
  if ((h.capabilities & kClientPluginAuth) && r.ok() && !r.empty()) {
    h.auth_plugin_name = std::string(r.null_string());
  }
  if ((h.capabilities & kClientConnectAttrs) && r.ok() && !r.empty()) {
    const std::uint64_t total = r.lenenc_int();
    if (r.ok() && total > r.remaining()) r.fail(ProtocolErrc::kTruncated);
    PacketReader attrs(r.bytes(static_cast<std::size_t>(total)));
    while (r.ok() && !attrs.empty()) {
      std::string key(attrs.lenenc_string());
      std::string value(attrs.lenenc_string());
      // The block's length was complete, so a pair that does not fit in it is malformed.
      if (!attrs.ok()) r.fail(ProtocolErrc::kMalformed);
      h.connect_attributes.emplace_back(std::move(key), std::move(value));
    }
  }
  if (!r.ok()) return r.error();
  return h;
}

void encode(const SslRequest& request, PacketWriter& out) {
  out.u32(request.capabilities);
  out.u32(request.max_packet_size);
  out.u8(request.character_set);
  out.zeros(kResponseFiller);
}

void encode(const HandshakeResponse41& response, PacketWriter& out) {
  const Capabilities caps = response.capabilities;
  encode(SslRequest{caps, response.max_packet_size, response.character_set}, out);
  out.null_string(response.username);
  if (caps & kClientPluginAuthLenencClientData) {
    out.lenenc_string(response.auth_response);
  } else if (caps & kClientSecureConnection) {
    out.u8(static_cast<std::uint8_t>(response.auth_response.size()));
    out.raw(response.auth_response);
  } else {
    out.null_string(response.auth_response);
  }
  if ((caps & kClientConnectWithDb) && response.database) out.null_string(*response.database);
  if ((caps & kClientPluginAuth) && response.auth_plugin_name) {
    out.null_string(*response.auth_plugin_name);
  }
  if (caps & kClientConnectAttrs) {
    std::string block;
    PacketWriter w(block);
    for (const auto& [key, value] : response.connect_attributes) {
      w.lenenc_string(key);
      w.lenenc_string(value);
    }
    out.lenenc_string(block);
  }
}

AuthSwitchRequest auth_switch(std::string_view plugin, const Scramble& scramble) {
  AuthSwitchRequest request{std::string(plugin), std::string(as_chars(scramble))};
  request.plugin_data.push_back('\0');
  return request;
}

void encode(const AuthSwitchRequest& request, PacketWriter& out) {
  out.u8(kEofHeader);  // 0xFE: the "status tag" of an auth switch
  out.null_string(request.plugin_name);
  out.raw(request.plugin_data);
}

Result<AuthSwitchRequest> decode_auth_switch_request(ByteView payload) {
  PacketReader r(payload);
  const std::uint8_t header = r.u8();
  if (r.ok() && header != kEofHeader) return make_error_code(ProtocolErrc::kUnexpectedPacket);
  AuthSwitchRequest request;
  request.plugin_name = r.null_string();
  request.plugin_data = r.rest();
  if (!r.ok()) return r.error();
  return request;
}

std::string decode_auth_switch_response(ByteView payload) { return std::string(as_chars(payload)); }

void encode(const AuthMoreData& more, PacketWriter& out) {
  out.u8(kAuthMoreDataHeader);
  out.raw(more.data);
}

Result<AuthMoreData> decode_auth_more_data(ByteView payload) {
  PacketReader r(payload);
  const std::uint8_t header = r.u8();
  if (!r.ok()) return r.error();
  if (header != kAuthMoreDataHeader) return make_error_code(ProtocolErrc::kUnexpectedPacket);
  return AuthMoreData{std::string(r.rest())};
}

}  // namespace ticketd::mysql
