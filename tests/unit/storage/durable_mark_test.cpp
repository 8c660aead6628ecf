#include "storage/durable_mark.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "storage/counter_store.h"

namespace ticketd {
namespace {

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("ticketd-mark-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  [[nodiscard]] std::string str() const { return path_.string(); }
  [[nodiscard]] std::string file() const { return (path_ / DurableMark::kFileName).string(); }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// magic "TDMARK01", position 87, generation 3 (little endian), FNV-1a 64 of the first 24 bytes.
constexpr std::string_view kSlot87Gen3 =
    "54444d41524b303157000000000000000300000000000000e7103611a7fd892e";

TEST(DurableMark, EncodesASlotByteForByte) {
  EXPECT_EQ(to_hex(encode_mark_slot(87, 3)), kSlot87Gen3);
  auto decoded = decode_mark_slot(encode_mark_slot(87, 3));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->first, 87u);
  EXPECT_EQ(decoded->second, 3u);
}

TEST(DurableMark, EveryPrefixAndEveryFlippedByteOfASlotIsRefused) {
  const std::string slot = encode_mark_slot(123456789, 42);
  for (std::size_t n = 0; n < slot.size(); ++n) {
    EXPECT_FALSE(decode_mark_slot(std::string_view(slot).substr(0, n))) << n;
  }
  for (std::size_t i = 0; i < slot.size(); ++i) {
    std::string bad = slot;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_FALSE(decode_mark_slot(bad)) << "flipped byte " << i;
  }
}

TEST(DurableMark, ANewFileStoresNothingAndReopensWithTheHighestPosition) {
  TempDir dir;
  {
    auto mark = DurableMark::open(dir.str());
    ASSERT_TRUE(mark) << mark.error().message;
    EXPECT_FALSE((*mark)->stored());
    ASSERT_TRUE((*mark)->record(10));
    ASSERT_TRUE((*mark)->record(25));
    ASSERT_TRUE((*mark)->record(7));  // lower: ignored, the mark never goes back
  }
  auto mark = DurableMark::open(dir.str());
  ASSERT_TRUE(mark) << mark.error().message;
  ASSERT_TRUE((*mark)->stored());
  EXPECT_EQ(*(*mark)->stored(), 25u);
}

TEST(DurableMark, ATornSlotLeavesTheOtherOne) {
  TempDir dir;
  {
    auto mark = DurableMark::open(dir.str());
    ASSERT_TRUE(mark);
    ASSERT_TRUE((*mark)->record(40, true));
    ASSERT_TRUE((*mark)->record(41, true));
  }
  // Tear the slot holding the newest generation (41); the older one (40) remains.
  std::string bytes = read_file(dir.file());
  ASSERT_EQ(bytes.size(), 64u);
  const auto s0 = decode_mark_slot(std::string_view(bytes).substr(0, 32));
  const auto s1 = decode_mark_slot(std::string_view(bytes).substr(32, 32));
  ASSERT_TRUE(s0 && s1);
  const std::size_t newest = s0->second > s1->second ? 0 : 32;
  bytes[newest + 9] = static_cast<char>(bytes[newest + 9] ^ 0x55);
  write_file(dir.file(), bytes);
  auto mark = DurableMark::open(dir.str());
  ASSERT_TRUE(mark) << mark.error().message;
  EXPECT_EQ(*(*mark)->stored(), 40u);
}

TEST(DurableMark, AFileWithNoReadableSlotIsRefusedNotGuessed) {
  TempDir dir;
  write_file(dir.file(), std::string(64, 'x'));
  auto mark = DurableMark::open(dir.str());
  ASSERT_FALSE(mark);
  EXPECT_EQ(mark.error().code, make_error_code(StorageErrc::kCorruption));
  EXPECT_NE(mark.error().message.find(DurableMark::kFileName), std::string::npos);
  write_file(dir.file(), "");
  EXPECT_FALSE(DurableMark::open(dir.str()));
}

}  // namespace
}  // namespace ticketd
