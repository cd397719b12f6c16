#include "server/base/key_slot.h"

#include <gtest/gtest.h>

#include <string>

namespace bloomgate {
namespace {

// Each slot below is what redis-server 7.0's CLUSTER KEYSLOT answered for
// the same key.
TEST(KeySlotTest, AgreesWithRedisOnPlainKeysAndHashTags) {
  const std::pair<std::string, std::uint16_t> cases[] = {
      {"foo", 12182},       {"bar", 5061},       {"somekey", 11058},
      {"123456789", 12739}, {"", 0},             {"{user1000}.following", 3443},
      {"{}a", 10875},       {"a{", 14311},       {"a{b}c{d}", 3300},
      {"x{}{y}", 14166},    {"{", 4092},         {"}{a}", 15495},
      {"\xc3\xa9", 10180},
  };
  for (const auto& [key, slot] : cases) EXPECT_EQ(KeySlot(key), slot) << key;
}

TEST(KeySlotTest, Crc16IsXmodem) {
  // The catalogue check value of CRC-16/XMODEM.
  EXPECT_EQ(Crc16Xmodem("123456789"), 0x31C3);
}

TEST(KeySlotTest, HashTagIsBetweenTheFirstOpenBraceAndTheNextClose) {
  EXPECT_EQ(HashedPart("{user1}.a"), "user1");
  EXPECT_EQ(HashedPart("a{b}c{d}"), "b");
  EXPECT_EQ(HashedPart("{}a"), "{}a");
  EXPECT_EQ(HashedPart("a{"), "a{");
  EXPECT_EQ(KeySlot("{user1}.a"), KeySlot("{user1}.b"));
}

}  // namespace
}  // namespace bloomgate
