// mysql_native_password: scrambles, client tokens and their verification.
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_authentication_methods_native_password_authentication.html
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/mysql/protocol/bytes.h"

namespace ticketd::mysql {

/// The 20 bytes of auth-plugin-data the server sends in the handshake (the "nonce").
using Scramble = std::array<std::uint8_t, 20>;
using Sha1Digest = std::array<std::uint8_t, 20>;

/// A fresh scramble from OpenSSL's CSPRNG, mapped like mysqld's generate_user_salt: each byte is
/// masked to 7 bits and 0 or '$' is bumped by one. Clients copy the scramble out of
/// NUL-terminated fields, and '$' would confuse the "$A$..." sha2 hash format.
/// Throws std::runtime_error if the CSPRNG fails (the process cannot authenticate anyone).
Scramble make_scramble();

/// SHA1(SHA1(password)): what the server stores instead of the password (mysql.user keeps the same
/// value, hex-encoded after a '*').
Sha1Digest double_sha1(std::string_view password);

/// What a client sends: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))), as 20 raw bytes;
/// empty for an empty password (clients send no token at all then).
std::string native_password_token(std::string_view password, const Scramble& scramble);

/// Checks a client's token against the stored double SHA1: recovers SHA1(password) as
/// token XOR SHA1(scramble + stored) and compares SHA1 of that with `stored_double_sha1` in
/// constant time. An empty token matches only the empty password (stored == double_sha1("")).
bool verify_native_password(const Sha1Digest& stored_double_sha1, const Scramble& scramble,
                            ByteView client_token);

}  // namespace ticketd::mysql
