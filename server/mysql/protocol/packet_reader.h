// Cursor over one logical MySQL payload with the protocol's primitive types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/base/result.h"
#include "server/mysql/protocol/bytes.h"
#include "server/mysql/protocol/protocol_errc.h"

namespace ticketd::mysql {

/// Reads the basic data types of
/// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_data_types.html
/// from a payload it does not own.
///
/// Errors are sticky, like std::istream's failbit: the first read that does not fit records an
/// error, moves the cursor to the end and makes every later read return 0 or an empty view. A
/// decoder can therefore transcribe a layout table field by field and check `error()` once before
/// returning; loops over "the rest of the packet" still terminate because the cursor is at the end.
/// Reads never touch memory outside the viewed span. Returned string_views point into that span.
/// Not thread safe (a value type used by one decoder at a time).
class PacketReader {
 public:
  explicit PacketReader(ByteView data) noexcept : data_(data) {}
  explicit PacketReader(std::string_view data) noexcept : data_(as_bytes(data)) {}

  std::uint8_t u8() noexcept;
  std::uint16_t u16() noexcept;
  std::uint32_t u24() noexcept;
  std::uint32_t u32() noexcept;
  std::uint64_t u64() noexcept;
  /// int<lenenc>. 0xFB (NULL in rows) and 0xFF (ERR marker) are not integers: kMalformed.
  std::uint64_t lenenc_int() noexcept;
  /// string<lenenc>.
  std::string_view lenenc_string() noexcept;
  /// string<NUL>; the terminator is consumed but not returned. No terminator: kTruncated.
  std::string_view null_string() noexcept;
  /// string<fix>.
  std::string_view fixed_string(std::size_t n) noexcept;
  /// string<EOF>: everything left (possibly empty, never an error on its own).
  std::string_view rest() noexcept;
  ByteView bytes(std::size_t n) noexcept;
  void skip(std::size_t n) noexcept { (void)bytes(n); }
  /// The next byte without consuming it; 0 (and an error) when empty.
  std::uint8_t peek() noexcept;
  /// Consumes a header or command byte; any other value fails with kUnexpectedPacket.
  void expect_u8(std::uint8_t expected) noexcept;

  std::size_t remaining() const noexcept { return data_.size() - pos_; }
  bool empty() const noexcept { return remaining() == 0; }
  std::size_t position() const noexcept { return pos_; }

  bool ok() const noexcept { return !error_; }
  ErrorCode error() const noexcept { return error_; }
  /// Records a decoder-level error (e.g. a bad enum value); the first error wins.
  void fail(ProtocolErrc e) noexcept;

 private:
  std::uint64_t fixed_int(std::size_t n) noexcept;

  ByteView data_;
  std::size_t pos_ = 0;
  ErrorCode error_;
};

}  // namespace ticketd::mysql
