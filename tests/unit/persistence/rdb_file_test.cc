// The RDB file reader over the file a RedisBloom 2.4.23 server saved
// (tests/data/redisbloom-sketches/redisbloom-all-types.rdb): every key with
// its type and deadline, the RedisBloom ones decoded; every flipped byte and
// every cut refused before a key is read; damage behind a re-computed
// checksum found by the parse, never read out of bounds.
#include "persistence/rdb_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "persistence/crc64_jones.h"

namespace bloomgate {
namespace {

std::string Fixture() {
  std::ifstream in(std::string(BLOOMGATE_TEST_DATA_DIR) +
                       "/redisbloom-sketches/redisbloom-all-types.rdb",
                   std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string Resign(std::string data) {
  data.resize(data.size() - 8);
  const uint64_t crc = Crc64Jones(0, data);
  for (int i = 0; i < 8; ++i) data.push_back(static_cast<char>(crc >> (8 * i)));
  return data;
}

// Reads every key; false (with *error) when the file is refused or damaged.
bool ReadAll(const std::string& data, std::map<std::string, RdbKey>* keys, std::string* error,
             MemoryBudget* budget = nullptr) {
  RdbFile file;
  if (Status s = RdbFile::Open(data, &file); !s.ok()) {
    *error = s.message();
    return false;
  }
  for (;;) {
    RdbKey key;
    AnyFilter filter;
    Status status = Status::Ok();
    if (!file.Next(FilterLimits{}, budget, &key, &filter, &status)) {
      *error = status.message();
      return status.ok();
    }
    const bool decoded = std::visit([](const auto& f) { return f != nullptr; }, filter);
    EXPECT_EQ(decoded, key.redisbloom && key.decode_error == DumpPayloadError::kNone)
        << key.name;
    (*keys)[key.name] = key;
  }
}

TEST(RdbFile, ReadsEveryKeyWithItsTypeAndDeadline) {
  std::map<std::string, RdbKey> keys;
  std::string error;
  MemoryBudget budget(0);
  ASSERT_TRUE(ReadAll(Fixture(), &keys, &error, &budget)) << error;
  EXPECT_EQ(budget.used(), 0u);
  const std::map<std::string, std::string> types = {
      {"bf", "MBbloom--"},      {"bf:copy", "MBbloom--"},   {"cf", "MBbloomCF"},
      {"cf:copy", "MBbloomCF"}, {"cms", "CMSk-TYPE"},      {"cms:copy", "CMSk-TYPE"},
      {"topk", "TopK-TYPE"},    {"topk:copy", "TopK-TYPE"}, {"td", "TDIS-TYPE"},
      {"td:copy", "TDIS-TYPE"}, {"plain:string", "string"}, {"plain:hash", "hash"},
      {"plain:list", "list"}};
  ASSERT_EQ(keys.size(), types.size());
  for (const auto& [name, type] : types) {
    ASSERT_TRUE(keys.contains(name)) << name;
    EXPECT_EQ(keys[name].type, type) << name;
    EXPECT_EQ(keys[name].redisbloom, type.size() == 9) << name;  // a module type's name
    EXPECT_EQ(keys[name].decode_error, DumpPayloadError::kNone) << name << ": " << keys[name].why;
    EXPECT_EQ(keys[name].db, 0u);
  }
  // SAVE ran at 2026-12-04 03:12:46 UTC with PTTLs of 2 h and 1 h left.
  EXPECT_EQ(keys["bf"].expire_at_ms, 1796361166146);
  EXPECT_EQ(keys["cms"].expire_at_ms, 1796357566121);
  EXPECT_EQ(keys["td"].expire_at_ms, 0);
}

TEST(RdbFile, EveryFlippedByteAndEveryCutIsRefusedBeforeAnyKey) {
  const std::string good = Fixture();
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    RdbFile file;
    EXPECT_FALSE(RdbFile::Open(bad, &file).ok()) << "byte " << i;
  }
  for (size_t n = 0; n < good.size(); n += 3) {
    RdbFile file;
    EXPECT_FALSE(RdbFile::Open(good.substr(0, n), &file).ok()) << "cut to " << n;
  }
}

TEST(RdbFile, VersionsOfRedis60To74AreReadAndNoOthers) {
  std::string data = Fixture();
  for (const char* version : {"0009", "0010", "0011", "0012"}) {
    data.replace(5, 4, version);
    std::map<std::string, RdbKey> keys;
    std::string error;
    EXPECT_TRUE(ReadAll(Resign(data), &keys, &error)) << version << ": " << error;
  }
  for (const char* version : {"0008", "0013", "00x1"}) {
    data.replace(5, 4, version);
    RdbFile file;
    EXPECT_FALSE(RdbFile::Open(Resign(data), &file).ok()) << version;
  }
}

// Behind a valid checksum: each byte after the header set to 0x81 or 0xff
// (by turns: a length's high bit, an all-ones count). The reader finds the
// damage or reads on; it never reads out of bounds (the sanitizer builds run
// this) and keeps nothing reserved. One value a byte, not both: each read is
// of the whole 6 KB file, and both took 18 s under ThreadSanitizer.
TEST(RdbFile, DamageBehindAValidChecksumIsFoundOrReadCleanly) {
  const std::string good = Fixture();
  MemoryBudget budget(0);
  size_t refused = 0;
  for (size_t i = 9; i + 9 < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(i % 2 == 0 ? 0x81 : 0xff);
    std::map<std::string, RdbKey> keys;
    std::string error;
    if (!ReadAll(Resign(bad), &keys, &error, &budget)) ++refused;
  }
  EXPECT_GT(refused, 0u);  // bit arrays and counters take any byte; headers do not
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace bloomgate
