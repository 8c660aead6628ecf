#include "server/mysql/protocol/result_set.h"

#include <stdexcept>

#include "server/mysql/protocol/binary_value.h"
#include "server/mysql/protocol/framing.h"
#include "server/mysql/protocol/generic_packets.h"

namespace ticketd::mysql {

void encode_text_row(const Row& row, PacketWriter& out) {
  for (const auto& value : row) {
    if (value) {
      out.lenenc_string(*value);
    } else {
      out.u8(kNullValue);
    }
  }
}

void encode_binary_row(const std::vector<ColumnDefinition41>& columns, const Row& row,
                       PacketWriter& out) {
  if (row.size() != columns.size()) {
    throw std::invalid_argument("binary row has " + std::to_string(row.size()) + " values for " +
                                std::to_string(columns.size()) + " columns");
  }
  // Result-set rows offset the bitmap by 2 bits while COM_STMT_EXECUTE parameters use offset 0;
  // swapping the two shifts every NULL by two columns in the client.
  constexpr std::size_t kOffset = 2;
  std::string bitmap((row.size() + 7 + kOffset) / 8, '\0');
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (!row[i]) {
      const std::size_t bit = i + kOffset;
      bitmap[bit / 8] = static_cast<char>(bitmap[bit / 8] | (1 << (bit % 8)));
    }
  }
  out.u8(kOkHeader);
  out.raw(bitmap);
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i]) write_binary_value(columns[i], *row[i], out);
  }
}

namespace {

// The payloads of a result set, in order, each handed to `emit` (a string_view valid for the
// call). `definitions` holds the encoded column definitions, or is empty to encode them here.
template <class Emit>
void emit_result_set(const std::vector<ColumnDefinition41>& columns,
                     const std::vector<std::string>& definitions, const Rows& rows, bool binary,
                     Capabilities client_caps, std::uint16_t status_flags, std::string& scratch,
                     Emit&& emit) {
  if (columns.empty()) throw std::invalid_argument("a result set needs at least one column");
  if (!definitions.empty() && definitions.size() != columns.size()) {
    throw std::invalid_argument("encoded definitions do not match the columns");
  }
  const bool deprecate_eof = (client_caps & kClientDeprecateEof) != 0;
  auto add = [&](auto&& write) {
    scratch.clear();
    PacketWriter w(scratch);
    write(w);
    emit(std::string_view(scratch));
  };

  add([&](PacketWriter& w) { w.lenenc_int(columns.size()); });
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (definitions.empty()) {
      add([&](PacketWriter& w) { encode(columns[i], w); });
    } else {
      emit(std::string_view(definitions[i]));
    }
  }
  if (!deprecate_eof) {
    add([&](PacketWriter& w) { encode(EofPacket{0, status_flags}, client_caps, w); });
  }
  for (const auto& row : rows) {
    if (binary) {
      add([&](PacketWriter& w) { encode_binary_row(columns, row, w); });
    } else {
      if (row.size() != columns.size()) {
        throw std::invalid_argument("text row width differs from the column count");
      }
      add([&](PacketWriter& w) { encode_text_row(row, w); });
    }
  }
  if (deprecate_eof) {
    OkPacket terminator;
    terminator.status_flags = status_flags;
    add([&](PacketWriter& w) { encode_ok_as_eof(terminator, client_caps, w); });
  } else {
    add([&](PacketWriter& w) { encode(EofPacket{0, status_flags}, client_caps, w); });
  }
}

}  // namespace

std::vector<std::string> encode_result_set(const std::vector<ColumnDefinition41>& columns,
                                           const Rows& rows, bool binary, Capabilities client_caps,
                                           std::uint16_t status_flags) {
  std::vector<std::string> payloads;
  payloads.reserve(columns.size() + rows.size() + 3);
  std::string scratch;
  emit_result_set(columns, {}, rows, binary, client_caps, status_flags, scratch,
                  [&payloads](std::string_view p) { payloads.emplace_back(p); });
  return payloads;
}

void append_result_set(std::string& out, std::uint8_t& sequence_id,
                       const std::vector<ColumnDefinition41>& columns,
                       const std::vector<std::string>& definitions, const Rows& rows, bool binary,
                       Capabilities client_caps, std::uint16_t status_flags, std::string& scratch) {
  emit_result_set(columns, definitions, rows, binary, client_caps, status_flags, scratch,
                  [&](std::string_view p) { append_frame(out, p, sequence_id); });
}

}  // namespace ticketd::mysql
