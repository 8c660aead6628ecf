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

constexpr std::string_view kIdentity = "8d1c7a9e-0c4e-4c36-9a51-2b7c0e3f5d11";
// magic "TDMARK02", position 87, generation 3 (little endian), identity length 36, the identity
// padded with zeros to 47 bytes, FNV-1a 64 of the first 72 bytes.
constexpr std::string_view kSlot87Gen3 =
    "54444d41524b3032570000000000000003000000000000002438643163376139652d306334652d346333362d"
    "396135312d326237633065336635643131000000000000000000000027223a9d7d60564d";
// The form written before the identity: magic "TDMARK01", position 87, generation 3, FNV-1a 64
// of the first 24 bytes.
constexpr std::string_view kOldSlot87Gen3 =
    "54444d41524b303157000000000000000300000000000000e7103611a7fd892e";

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(DurableMark, EncodesASlotByteForByte) {
  const MarkSlot slot{87, 3, std::string(kIdentity)};
  EXPECT_EQ(to_hex(encode_mark_slot(slot)), kSlot87Gen3);
  auto decoded = decode_mark_slot(encode_mark_slot(slot));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, slot);
}

TEST(DurableMark, DecodesTheOldFormWithoutAnIdentity) {
  auto decoded = decode_mark_slot(from_hex(kOldSlot87Gen3));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, (MarkSlot{87, 3, ""}));
}

TEST(DurableMark, EveryPrefixAndEveryFlippedByteOfASlotIsRefused) {
  for (const std::string& slot : {encode_mark_slot(MarkSlot{123456789, 42, std::string(kIdentity)}),
                                  from_hex(kOldSlot87Gen3)}) {
    for (std::size_t n = 0; n < slot.size(); ++n) {
      EXPECT_FALSE(decode_mark_slot(std::string_view(slot).substr(0, n))) << n;
    }
    for (std::size_t i = 0; i < slot.size(); ++i) {
      std::string bad = slot;
      bad[i] = static_cast<char>(bad[i] ^ 0x01);
      EXPECT_FALSE(decode_mark_slot(bad)) << "flipped byte " << i;
    }
  }
}

TEST(DurableMark, AnIdentityLongerThanASlotHoldsIsRefused) {
  std::string slot = encode_mark_slot(MarkSlot{1, 1, "x"});
  slot[24] = static_cast<char>(DurableMark::kMaxIdentity + 1);
  EXPECT_FALSE(decode_mark_slot(slot));
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
  ASSERT_EQ(bytes.size(), 160u);
  const auto s0 = decode_mark_slot(std::string_view(bytes).substr(0, 80));
  const auto s1 = decode_mark_slot(std::string_view(bytes).substr(80, 80));
  ASSERT_TRUE(s0 && s1);
  const std::size_t newest = s0->generation > s1->generation ? 0 : 80;
  bytes[newest + 9] = static_cast<char>(bytes[newest + 9] ^ 0x55);
  write_file(dir.file(), bytes);
  auto mark = DurableMark::open(dir.str());
  ASSERT_TRUE(mark) << mark.error().message;
  EXPECT_EQ(*(*mark)->stored(), 40u);
}

TEST(DurableMark, TheIdentityIsBoundDurablyAndReadWithoutWriting) {
  TempDir dir;
  auto none = DurableMark::read(dir.str());
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_FALSE(std::filesystem::exists(dir.file()));  // read() creates nothing
  {
    auto mark = DurableMark::open(dir.str());
    ASSERT_TRUE(mark);
    EXPECT_EQ((*mark)->identity(), "");
    ASSERT_TRUE((*mark)->bind(std::string(kIdentity)));
    ASSERT_TRUE((*mark)->record(77, true));
  }
  const std::string bytes = read_file(dir.file());
  auto reading = DurableMark::read(dir.str());
  ASSERT_TRUE(reading);
  ASSERT_TRUE(*reading);
  EXPECT_EQ((*reading)->position, 77u);
  EXPECT_EQ((*reading)->identity, kIdentity);
  EXPECT_EQ(read_file(dir.file()), bytes);
  // Both slots carry it: tearing the newest keeps the identity.
  for (std::size_t at : {std::size_t{0}, std::size_t{80}}) {
    auto slot = decode_mark_slot(std::string_view(bytes).substr(at, 80));
    ASSERT_TRUE(slot);
    EXPECT_EQ(slot->identity, kIdentity);
  }
  auto mark = DurableMark::open(dir.str());
  ASSERT_TRUE(mark);
  EXPECT_EQ((*mark)->identity(), kIdentity);
}

TEST(DurableMark, AFileOfTheOldFormIsReadAndRewrittenInTheNewOne) {
  TempDir dir;
  // Two old slots: generation 3 at position 87, and a second one that reads as torn.
  std::string old = from_hex(kOldSlot87Gen3);
  std::string older = from_hex(kOldSlot87Gen3);
  older[8] = 80;  // position 80 ...
  older[16] = 2;  // ... generation 2: its checksum no longer matches, so it reads as torn
  write_file(dir.file(), old + older);
  auto reading = DurableMark::read(dir.str());
  ASSERT_TRUE(reading && *reading);
  EXPECT_EQ((*reading)->position, 87u);
  {
    auto mark = DurableMark::open(dir.str());
    ASSERT_TRUE(mark) << mark.error().message;
    EXPECT_EQ(*(*mark)->stored(), 87u);
  }
  const std::string bytes = read_file(dir.file());
  ASSERT_EQ(bytes.size(), 160u);
  EXPECT_EQ(bytes.substr(0, 8), "TDMARK02");
  EXPECT_EQ(bytes.substr(80, 8), "TDMARK02");
  auto mark = DurableMark::open(dir.str());
  ASSERT_TRUE(mark);
  EXPECT_EQ(*(*mark)->stored(), 87u);
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
