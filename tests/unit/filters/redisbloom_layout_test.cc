// RedisBloom's layer layout against facts from RedisBloom itself: the hash
// values come from the implementation that reproduces every BF.EXISTS
// answer in ../shared/redisbloom-dumps (tests/e2e/test_redisbloom_import.py
// checks those answers end to end); the sizes are those dumps' headers.
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "filters/redisbloom_layout.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

TEST(RedisBloomLayout, HashIsMurmur64ASeededThenReseededWithItsOwnValue) {
  // Lengths 0, 5 (tail only) and 13 (one block and a tail).
  EXPECT_EQ(RedisBloomHash("").lo, 0x1ab11ea5a7b2c56eull);
  EXPECT_EQ(RedisBloomHash("").hi, 0xbbddcb5ab56dd547ull);
  EXPECT_EQ(RedisBloomHash("hello").lo, 0x5ba5b8a59803e699ull);
  EXPECT_EQ(RedisBloomHash("hello").hi, 0xa7d451d588a0c2a4ull);
  EXPECT_EQ(RedisBloomHash("item:12345678").lo, 0xd3698f56d6278166ull);
  EXPECT_EQ(RedisBloomHash("item:12345678").hi, 0x2352c14e214f9391ull);
}

// A dump's bpe is client input: a huge, negative or NaN one gives 0 hashes
// (refused by every caller), never an undefined cast (dump_chunk_fuzz found
// a chunk with bpe 2.8e247: UBSan's float-cast-overflow in the fresh-clone CI).
TEST(RedisBloomLayout, AHashCountOutOfRangeIsZeroNotUndefined) {
  EXPECT_EQ(RedisBloomHashes(RedisBloomBitsPerEntry(0.01)), 7u);
  EXPECT_EQ(RedisBloomHashes(2.8e247), 0u);
  EXPECT_EQ(RedisBloomHashes(1e10), 0u);  // ceil(ln 2 x 1e10) > 2^32
  EXPECT_EQ(RedisBloomHashes(-5.0), 0u);
  EXPECT_EQ(RedisBloomHashes(std::nan("")), 0u);
  EXPECT_EQ(RedisBloomHashes(std::numeric_limits<double>::infinity()), 0u);
}

TEST(RedisBloomLayout, SizesALayerAsBfReserve001Capacity1000) {
  // bf-reserved.json: layer error 0.005 -> bpe 11.027753418256411 (bit
  // pattern 0x40260e35b22f86e9), 11,072 bits (1,384 bytes), 8 hashes.
  EXPECT_EQ(std::bit_cast<uint64_t>(RedisBloomBitsPerEntry(0.005)), 0x40260e35b22f86e9ull);
  const BlockedShape shape = ChooseRedisBloomShape(0.005, 1000);
  EXPECT_EQ(shape.cells, 11072u);
  EXPECT_EQ(shape.probes, 8u);
  EXPECT_EQ(shape.block_cells, kRedisBloomWordBits);
  // bf-expansion-4.json's third link: 3,200 entries at 0.000125.
  EXPECT_EQ(ChooseRedisBloomShape(0.000125, 3200).cells, 59904u);
  EXPECT_EQ(ChooseRedisBloomShape(0.000125, 3200).probes, 13u);
  // Absurd capacities saturate instead of wrapping.
  EXPECT_EQ(ChooseRedisBloomShape(0.005, UINT64_MAX).cells, MaxBlockedCells(kRedisBloomWordBits));
}

TEST(RedisBloomLayout, InfoSizeCountsRedisBloomsStructs) {
  EXPECT_EQ(RedisBloomInfoSize(1, 1384), 1480u);  // bf-reserved.json
  EXPECT_EQ(RedisBloomInfoSize(4, 2688), 2976u);  // bf-autocreated.json
}

TEST(RedisBloomLayout, ProbesUseTheModuloOverTheWholeArray) {
  std::unique_ptr<ClassicBloom> bloom = ClassicBloom::Create(/*bits=*/1152, /*probes=*/8);
  ASSERT_NE(bloom, nullptr);
  const KeyHash h = RedisBloomHash("hello");
  EXPECT_TRUE(bloom->Add(h));
  EXPECT_FALSE(bloom->Add(h));
  uint64_t set = 0;
  for (uint64_t w = 0; w < bloom->num_words(); ++w) set += std::popcount(bloom->words()[w].load());
  EXPECT_LE(set, 8u);
  for (uint32_t i = 0; i < 8; ++i) {
    const uint64_t x = (h.lo + uint64_t{i} * h.hi) % 1152;
    EXPECT_NE(bloom->words()[x / 64].load() & (uint64_t{1} << (x % 64)), 0u) << "probe " << i;
  }
  EXPECT_EQ(ClassicBloom::Create(/*bits=*/100, /*probes=*/8), nullptr);  // not whole words
  EXPECT_EQ(ClassicBloom::Create(/*bits=*/64, /*probes=*/0), nullptr);
}

TEST(RedisBloomLayout, AScalableFilterGrowsRedisBloomLayersWithoutFalseNegatives) {
  ScalableBloomOptions options;
  options.error_rate = 0.01;
  options.capacity = 100;
  options.layout = BloomLayout::kRedisBloom;
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  EXPECT_EQ(filter->hash_seed(), 0u);  // seedless, as RedisBloom
  for (int i = 0; i < 2500; ++i) {
    bool added = false;
    ASSERT_EQ(filter->Add(filter->Hash("item:" + std::to_string(i)), &added), FilterStatus::kOk);
  }
  for (int i = 0; i < 2500; ++i) {
    ASSERT_TRUE(filter->MayContain(filter->Hash("item:" + std::to_string(i)))) << i;
  }
  // RedisBloom's chain for these options: 100, 200, 400, 800, 1600.
  ASSERT_EQ(filter->num_layers(), 5u);
  EXPECT_EQ(filter->capacity(), 3100u);
  const std::vector<BloomLayerInfo> layers = filter->Layers();
  EXPECT_EQ(layers[4].bits, 26880u);  // bf-scaled-5-layers.json's fifth link
  EXPECT_EQ(layers[4].probes, 12u);
  int fp = 0;
  for (int i = 0; i < 10000; ++i) fp += filter->MayContain(filter->Hash("probe:" + std::to_string(i)));
  // Bound 1%: the chain's sum of layer rates stays under it.
  EXPECT_LT(fp, 100) << "false positives in 10,000 probes";
}

}  // namespace
}  // namespace bloomgate
