// The authentication plugins' cryptography: scrambles, client tokens and their verification.
// mysql_native_password:
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_authentication_methods_native_password_authentication.html
// caching_sha2_password:
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_caching_sha2_authentication_exchanges.html
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
using Sha256Digest = std::array<std::uint8_t, 32>;

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

/// SHA256(SHA256(password)): the verifier caching_sha2_password's fast authentication checks a
/// scramble against (mysqld keeps it in its in-memory cache after a full authentication; ticketd
/// keeps it for every user, so the fast path always decides).
Sha256Digest double_sha256(std::string_view password);

/// What a client sends for caching_sha2_password's fast authentication:
/// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + scramble), 32 raw bytes; empty for an
/// empty password.
std::string caching_sha2_token(std::string_view password, const Scramble& scramble);

/// Fast authentication: recovers SHA256(password) as token XOR SHA256(stored + scramble) and
/// compares SHA256 of it with `stored_double_sha256` in constant time. An empty token (or the
/// single NUL some clients send) matches only the empty password.
bool verify_caching_sha2_token(const Sha256Digest& stored_double_sha256, const Scramble& scramble,
                               ByteView client_token);

/// Full authentication: the client sent its password itself (inside TLS).
bool verify_cleartext_password(const Sha256Digest& stored_double_sha256, std::string_view password);

}  // namespace ticketd::mysql
