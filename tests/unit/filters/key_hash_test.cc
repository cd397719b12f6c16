#include "filters/key_hash.h"

#include <gtest/gtest.h>
#include <xxhash.h>  // the library build, to compare with our inlined copy

#include <string>

namespace bloomgate {
namespace {

TEST(KeyHash, IsTheLibraryXxh3OfTheItemWithSeedZero) {
  std::string item;
  for (int length = 0; length <= 300; ++length) {
    const XXH128_hash_t expected = XXH3_128bits(item.data(), item.size());
    const KeyHash h = HashKey(item);
    EXPECT_EQ(h.lo, expected.low64) << "length " << length;
    EXPECT_EQ(h.hi, expected.high64) << "length " << length;
    item.push_back(static_cast<char>('a' + length % 26));
  }
}

// Snapshots store filter bits, so the hash is part of the on-disk format:
// these values must never change.
TEST(KeyHash, GoldenValuesArePinned) {
  const KeyHash empty = HashKey("");
  EXPECT_EQ(empty.hi, 0x99aa06d3014798d8ull);
  EXPECT_EQ(empty.lo, 0x6001c324468d497full);
  const KeyHash hello = HashKey("hello");
  EXPECT_EQ(hello.hi, 0xb5e9c1ad071b3e7full);
  EXPECT_EQ(hello.lo, 0xc779cfaa5e523818ull);
}

TEST(KeyHash, HashesEveryByteIncludingNul) {
  const KeyHash a = HashKey(std::string_view("a", 1));
  const KeyHash a_nul_b = HashKey(std::string_view("a\0b", 3));
  const KeyHash a_nul = HashKey(std::string_view("a\0", 2));
  EXPECT_NE(a.lo, a_nul_b.lo);
  EXPECT_NE(a.lo, a_nul.lo);
  EXPECT_NE(a_nul.lo, a_nul_b.lo);
}

}  // namespace
}  // namespace bloomgate
