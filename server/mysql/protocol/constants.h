// Numeric constants of the MySQL client/server protocol, under MySQL's own names.
#pragma once

#include <cstdint>
#include <string_view>

namespace ticketd::mysql {

/// Capability flags, negotiated in the handshake.
/// https://dev.mysql.com/doc/dev/mysql-server/latest/group__group__cs__capabilities__flags.html
using Capabilities = std::uint32_t;

inline constexpr Capabilities kClientLongPassword = 1U << 0;
inline constexpr Capabilities kClientFoundRows = 1U << 1;
inline constexpr Capabilities kClientLongFlag = 1U << 2;
inline constexpr Capabilities kClientConnectWithDb = 1U << 3;
inline constexpr Capabilities kClientNoSchema = 1U << 4;
inline constexpr Capabilities kClientCompress = 1U << 5;
inline constexpr Capabilities kClientOdbc = 1U << 6;
inline constexpr Capabilities kClientLocalFiles = 1U << 7;
inline constexpr Capabilities kClientIgnoreSpace = 1U << 8;
inline constexpr Capabilities kClientProtocol41 = 1U << 9;
inline constexpr Capabilities kClientInteractive = 1U << 10;
inline constexpr Capabilities kClientSsl = 1U << 11;
inline constexpr Capabilities kClientIgnoreSigpipe = 1U << 12;
inline constexpr Capabilities kClientTransactions = 1U << 13;
inline constexpr Capabilities kClientReserved = 1U << 14;
/// Called CLIENT_RESERVED2 in newer headers; clients still send it to mean "4.1 auth".
inline constexpr Capabilities kClientSecureConnection = 1U << 15;
inline constexpr Capabilities kClientMultiStatements = 1U << 16;
inline constexpr Capabilities kClientMultiResults = 1U << 17;
inline constexpr Capabilities kClientPsMultiResults = 1U << 18;
inline constexpr Capabilities kClientPluginAuth = 1U << 19;
inline constexpr Capabilities kClientConnectAttrs = 1U << 20;
inline constexpr Capabilities kClientPluginAuthLenencClientData = 1U << 21;
inline constexpr Capabilities kClientCanHandleExpiredPasswords = 1U << 22;
inline constexpr Capabilities kClientSessionTrack = 1U << 23;
inline constexpr Capabilities kClientDeprecateEof = 1U << 24;
inline constexpr Capabilities kClientOptionalResultsetMetadata = 1U << 25;
inline constexpr Capabilities kClientZstdCompressionAlgorithm = 1U << 26;
inline constexpr Capabilities kClientQueryAttributes = 1U << 27;
inline constexpr Capabilities kMultiFactorAuthentication = 1U << 28;
inline constexpr Capabilities kClientCapabilityExtension = 1U << 29;
inline constexpr Capabilities kClientSslVerifyServerCert = 1U << 30;
inline constexpr Capabilities kClientRememberOptions = 1U << 31;

/// Server status flags, sent in OK and EOF packets.
/// https://dev.mysql.com/doc/dev/mysql-server/latest/mysql__com_8h.html (SERVER_STATUS_flags_enum)
inline constexpr std::uint16_t kServerStatusInTrans = 0x0001;
inline constexpr std::uint16_t kServerStatusAutocommit = 0x0002;
inline constexpr std::uint16_t kServerMoreResultsExists = 0x0008;
inline constexpr std::uint16_t kServerQueryNoGoodIndexUsed = 0x0010;
inline constexpr std::uint16_t kServerQueryNoIndexUsed = 0x0020;
inline constexpr std::uint16_t kServerStatusCursorExists = 0x0040;
inline constexpr std::uint16_t kServerStatusLastRowSent = 0x0080;
inline constexpr std::uint16_t kServerStatusDbDropped = 0x0100;
inline constexpr std::uint16_t kServerStatusNoBackslashEscapes = 0x0200;
inline constexpr std::uint16_t kServerStatusMetadataChanged = 0x0400;
inline constexpr std::uint16_t kServerQueryWasSlow = 0x0800;
inline constexpr std::uint16_t kServerPsOutParams = 0x1000;
inline constexpr std::uint16_t kServerStatusInTransReadonly = 0x2000;
inline constexpr std::uint16_t kServerSessionStateChanged = 0x4000;

/// Command bytes: the first byte of every command-phase payload.
/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_command_phase.html
inline constexpr std::uint8_t kComSleep = 0x00;
inline constexpr std::uint8_t kComQuit = 0x01;
inline constexpr std::uint8_t kComInitDb = 0x02;
inline constexpr std::uint8_t kComQuery = 0x03;
inline constexpr std::uint8_t kComFieldList = 0x04;
inline constexpr std::uint8_t kComCreateDb = 0x05;
inline constexpr std::uint8_t kComDropDb = 0x06;
inline constexpr std::uint8_t kComRefresh = 0x07;
inline constexpr std::uint8_t kComShutdown = 0x08;
inline constexpr std::uint8_t kComStatistics = 0x09;
inline constexpr std::uint8_t kComProcessInfo = 0x0A;
inline constexpr std::uint8_t kComConnect = 0x0B;
inline constexpr std::uint8_t kComProcessKill = 0x0C;
inline constexpr std::uint8_t kComDebug = 0x0D;
inline constexpr std::uint8_t kComPing = 0x0E;
inline constexpr std::uint8_t kComTime = 0x0F;
inline constexpr std::uint8_t kComDelayedInsert = 0x10;
inline constexpr std::uint8_t kComChangeUser = 0x11;
inline constexpr std::uint8_t kComBinlogDump = 0x12;
inline constexpr std::uint8_t kComTableDump = 0x13;
inline constexpr std::uint8_t kComConnectOut = 0x14;
inline constexpr std::uint8_t kComRegisterSlave = 0x15;
inline constexpr std::uint8_t kComStmtPrepare = 0x16;
inline constexpr std::uint8_t kComStmtExecute = 0x17;
inline constexpr std::uint8_t kComStmtSendLongData = 0x18;
inline constexpr std::uint8_t kComStmtClose = 0x19;
inline constexpr std::uint8_t kComStmtReset = 0x1A;
inline constexpr std::uint8_t kComSetOption = 0x1B;
inline constexpr std::uint8_t kComStmtFetch = 0x1C;
inline constexpr std::uint8_t kComDaemon = 0x1D;
inline constexpr std::uint8_t kComBinlogDumpGtid = 0x1E;
inline constexpr std::uint8_t kComResetConnection = 0x1F;
inline constexpr std::uint8_t kComClone = 0x20;

/// COM_SET_OPTION values (enum_mysql_set_option).
inline constexpr std::uint16_t kMysqlOptionMultiStatementsOn = 0;
inline constexpr std::uint16_t kMysqlOptionMultiStatementsOff = 1;

/// Column types (enum_field_types), used in column definitions and binary-protocol values.
/// https://dev.mysql.com/doc/dev/mysql-server/latest/field__types_8h.html
inline constexpr std::uint8_t kTypeDecimal = 0x00;
inline constexpr std::uint8_t kTypeTiny = 0x01;
inline constexpr std::uint8_t kTypeShort = 0x02;
inline constexpr std::uint8_t kTypeLong = 0x03;
inline constexpr std::uint8_t kTypeFloat = 0x04;
inline constexpr std::uint8_t kTypeDouble = 0x05;
inline constexpr std::uint8_t kTypeNull = 0x06;
inline constexpr std::uint8_t kTypeTimestamp = 0x07;
inline constexpr std::uint8_t kTypeLongLong = 0x08;
inline constexpr std::uint8_t kTypeInt24 = 0x09;
inline constexpr std::uint8_t kTypeDate = 0x0A;
inline constexpr std::uint8_t kTypeTime = 0x0B;
inline constexpr std::uint8_t kTypeDatetime = 0x0C;
inline constexpr std::uint8_t kTypeYear = 0x0D;
inline constexpr std::uint8_t kTypeNewDate = 0x0E;
inline constexpr std::uint8_t kTypeVarchar = 0x0F;
inline constexpr std::uint8_t kTypeBit = 0x10;
inline constexpr std::uint8_t kTypeTimestamp2 = 0x11;
inline constexpr std::uint8_t kTypeDatetime2 = 0x12;
inline constexpr std::uint8_t kTypeTime2 = 0x13;
inline constexpr std::uint8_t kTypeJson = 0xF5;
inline constexpr std::uint8_t kTypeNewDecimal = 0xF6;
inline constexpr std::uint8_t kTypeEnum = 0xF7;
inline constexpr std::uint8_t kTypeSet = 0xF8;
inline constexpr std::uint8_t kTypeTinyBlob = 0xF9;
inline constexpr std::uint8_t kTypeMediumBlob = 0xFA;
inline constexpr std::uint8_t kTypeLongBlob = 0xFB;
inline constexpr std::uint8_t kTypeBlob = 0xFC;
inline constexpr std::uint8_t kTypeVarString = 0xFD;
inline constexpr std::uint8_t kTypeString = 0xFE;
inline constexpr std::uint8_t kTypeGeometry = 0xFF;

/// In COM_STMT_EXECUTE each parameter type is 2 bytes: the type, then a flag byte whose high bit
/// marks an unsigned integer. Read as one little-endian u16 that bit is 0x8000.
inline constexpr std::uint16_t kParamUnsignedFlag = 0x8000;

/// Column definition flags.
/// https://dev.mysql.com/doc/dev/mysql-server/latest/group__group__cs__column__definition__flags.html
inline constexpr std::uint16_t kNotNullFlag = 1;
inline constexpr std::uint16_t kPriKeyFlag = 2;
inline constexpr std::uint16_t kUniqueKeyFlag = 4;
inline constexpr std::uint16_t kMultipleKeyFlag = 8;
inline constexpr std::uint16_t kBlobFlag = 16;
inline constexpr std::uint16_t kUnsignedFlag = 32;
inline constexpr std::uint16_t kZerofillFlag = 64;
inline constexpr std::uint16_t kBinaryFlag = 128;
inline constexpr std::uint16_t kEnumFlag = 256;
inline constexpr std::uint16_t kAutoIncrementFlag = 512;
inline constexpr std::uint16_t kTimestampFlag = 1024;
inline constexpr std::uint16_t kSetFlag = 2048;
inline constexpr std::uint16_t kNoDefaultValueFlag = 4096;
inline constexpr std::uint16_t kOnUpdateNowFlag = 8192;
inline constexpr std::uint16_t kNumFlag = 32768;

/// Collation ids (the "character set" byte of the handshake and column definitions).
inline constexpr std::uint8_t kCharsetLatin1SwedishCi = 8;
inline constexpr std::uint8_t kCharsetUtf8GeneralCi = 33;
inline constexpr std::uint8_t kCharsetUtf8mb4GeneralCi = 45;
inline constexpr std::uint8_t kCharsetBinary = 63;
inline constexpr std::uint8_t kCharsetUtf8mb4Uca0900AiCi = 255;

/// COM_STMT_EXECUTE flags (enum_cursor_type).
inline constexpr std::uint8_t kCursorTypeNoCursor = 0;
inline constexpr std::uint8_t kCursorTypeReadOnly = 1;
inline constexpr std::uint8_t kCursorTypeForUpdate = 2;
inline constexpr std::uint8_t kCursorTypeScrollable = 4;
inline constexpr std::uint8_t kParameterCountAvailable = 8;

/// Packet header bytes of the generic responses.
inline constexpr std::uint8_t kOkHeader = 0x00;
inline constexpr std::uint8_t kEofHeader = 0xFE;
inline constexpr std::uint8_t kErrHeader = 0xFF;
/// A NULL column value in a text-protocol row.
inline constexpr std::uint8_t kNullValue = 0xFB;

/// A caching_sha2_password exchange's status byte after 0x01 (AuthMoreData), and what a client
/// sends to ask for the server's RSA public key.
inline constexpr std::uint8_t kAuthMoreDataHeader = 0x01;
inline constexpr std::uint8_t kCachingSha2FastAuthSuccess = 0x03;
inline constexpr std::uint8_t kCachingSha2PerformFullAuthentication = 0x04;
inline constexpr std::uint8_t kCachingSha2RequestPublicKey = 0x02;

inline constexpr std::string_view kNativePasswordPlugin = "mysql_native_password";
inline constexpr std::string_view kCachingSha2PasswordPlugin = "caching_sha2_password";

}  // namespace ticketd::mysql
